import AsyncHTTPClient
public import FleetModel
public import Foundation
public import Logging
import NIOCore
import NIOSSL
import SenderCore

/// The sender's effect stage for one attempt: makes the provider call the fold decided and
/// turns whatever happens into a `send.result` for the sender's inbox. It never throws: a
/// call that got no answer (connection refused or reset, TLS failure, timeout) is a retryable
/// result, so every attempt gets exactly one answer record.
///
/// The only clock read in the sender is here, at the edge: provider tokens' ages and FCM's
/// `ttl`. Logs name the attempt, the provider and the status, never a token or key.
public final class ProviderEffect: Sendable {
    private let settings: ProviderSettings
    private let client: HTTPClient
    private let apnsPool: HTTP2ConnectionPool?
    private let apns: APNsClient?
    private let fcm: FCMClient?
    private let email: EmailClient?
    private let logger: Logger
    private let metrics: SenderMetrics?
    private let now: @Sendable () -> Date

    /// APNs on the sender's own HTTP/2 connection pool (swift-nio-http2, swift-nio-ssl: many
    /// concurrent streams per connection, a burst of calls written and flushed at once); FCM
    /// and email on one async-http-client, a connection pool per host. Both trust the system's
    /// roots plus `extraTrustRootsPEM` and verify the server's name.
    public init(
        settings: ProviderSettings, logger: Logger, metrics: SenderMetrics? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        let extraTrustRoots = try settings.extraTrustRootsPEM.map { try NIOSSLCertificate.fromPEMBytes(Array($0.utf8)) } ?? []
        if !extraTrustRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraTrustRoots)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(5))
        // The fleet bootstraps no tracer: without this the client builds span attributes for
        // the no-op tracer on every call (5 % of the client's CPU per send, SenderBenchmark).
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.client = client
        self.settings = settings
        self.logger = logger
        self.metrics = metrics
        self.now = now
        let timeout = settings.requestTimeout
        do {
            if let apnsSettings = settings.apns {
                guard let origin = HTTP2ConnectionPool.Origin(url: apnsSettings.endpoint) else {
                    throw ProviderSettings.Invalid(description: "SENDER_APNS_ENDPOINT is not an https URL without a path")
                }
                let pool = try HTTP2ConnectionPool(
                    origin: origin, extraTrustRoots: extraTrustRoots, maximumConnections: settings.apnsConnections)
                apnsPool = pool
                apns = APNsClient(
                    pool: pool, tokens: try APNsProviderToken(settings: apnsSettings, now: now),
                    timeout: .nanoseconds(Int64(timeout * 1_000_000_000)))
            } else {
                apnsPool = nil
                apns = nil
            }
            fcm = try settings.fcm.map {
                FCMClient(settings: $0, client: client, tokens: try FCMAccessToken(account: $0.serviceAccount, client: client, timeout: timeout, now: now), timeout: timeout)
            }
        } catch {
            try? client.syncShutdown()
            throw error
        }
        email = settings.email.map { EmailClient(settings: $0, client: client, timeout: timeout) }
    }

    /// Closes the connections; call once no `perform` is running.
    public func shutdown() async throws {
        await apnsPool?.shutdown()
        try await client.shutdown()
    }

    /// Performs `attempt` and returns its answer.
    public func perform(_ attempt: SendAttempt) async -> SendResult {
        let clock = ContinuousClock()
        let start = clock.now
        let result = await call(attempt)
        let elapsed = clock.now - start
        metrics?.record(result, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        return result
    }

    private func call(_ attempt: SendAttempt) async -> SendResult {
        do {
            switch attempt.provider {
            case .apns:
                guard let apns else { return notConfigured(attempt) }
                return try await apns.send(attempt)
            case .fcm:
                guard let fcm else { return notConfigured(attempt) }
                return try await fcm.send(attempt, now: now())
            case .email:
                guard let email else { return notConfigured(attempt) }
                return try await email.send(attempt)
            }
        } catch {
            let reason = Self.describe(error)
            logger.warning("no answer from provider", metadata: [
                "attempt": "\(attempt.id)", "provider": "\(attempt.provider.rawValue)", "error": "\(reason)",
            ])
            return SendResult(
                userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
                provider: attempt.provider, outcome: ProviderAnswers.noAnswer, reason: reason)
        }
    }

    private func notConfigured(_ attempt: SendAttempt) -> SendResult {
        SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: attempt.provider, outcome: .rejected, reason: "provider \(attempt.provider.rawValue) not configured")
    }

    /// A short reason for an error without an answer: the error's kind, never its payload
    /// (an HTTP error can quote a URL, and an APNs URL holds the device token). An error of
    /// a kind not listed here is named by its type, which says where it came from (NIO's
    /// `IOError`, `NIOConnectionError`, a `ChannelError`) and carries nothing of the request.
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTP2CallError { return error.description }
        if let error = error as? ChannelError, case .connectTimeout = error { return "timeout" }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout: return "timeout"
            case .remoteConnectionClosed: return "connection closed"
            default: return "http client error"
            }
        }
        if error is NIOSSLError || error is NIOSSLExtraError { return "tls error" }
        if error is ProviderSettings.Invalid { return "credentials unusable" }
        if error is CancellationError { return "cancelled" }
        return "connection error (\(type(of: error)))"
    }
}
