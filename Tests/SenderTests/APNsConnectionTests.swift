import FleetModel
import Foundation
import Logging
import ProviderClients
import SenderTestSupport
import Synchronization
import Testing

/// The APNs client's own HTTP/2 connections (swift-nio-http2 + swift-nio-ssl) against the
/// stand-in APNs: the server's stream limit is kept, a connection the server sends GOAWAY on or
/// loses is replaced, and only a server with a certificate from the configured CA is talked to
/// (issue 17, "Providers, real protocols"; the sender's connection pool and concurrent streams).
@Suite(.timeLimit(.minutes(6))) struct APNsConnectionTests {
    /// An APNs stand-in on its own server, and an effect configured for it.
    struct Setup {
        let authority: TestCertificateAuthority
        let apns: FakeAPNs
        let server: FakeHTTPServer
        let effect: ProviderEffect

        static func with(
            maximumConcurrentStreams: Int = 100, connections: Int = 4, trust: TestCertificateAuthority? = nil,
            requestTimeout: TimeInterval = 30, hold: Duration = .zero, inFlight: InFlight = InFlight(), _ body: (Setup) async throws -> Void
        ) async throws {
            let authority = try TestCertificateAuthority()
            let apns = FakeAPNs()
            let server = try await FakeHTTPServer.start(authority: authority, maximumConcurrentStreams: maximumConcurrentStreams) { request in
                inFlight.enter()
                if hold > .zero { try? await Task.sleep(for: hold) }
                let response = await apns.respond(request)
                inFlight.leave()
                return response
            }
            let settings = ProviderSettings(
                apns: .init(endpoint: server.baseURL, keyId: apns.keyId, teamId: apns.teamId, signingKey: Secret(apns.signingKeyPEM)),
                extraTrustRootsPEM: (trust ?? authority).rootPEM, requestTimeout: requestTimeout, apnsConnections: connections)
            let effect = try ProviderEffect(settings: settings, logger: Logger(label: "sender-tests"))
            let setup = Setup(authority: authority, apns: apns, server: server, effect: effect)
            do { try await body(setup) } catch {
                try? await effect.shutdown(); try? await server.stop()
                throw error
            }
            try await effect.shutdown()
            try await server.stop()
        }
    }

    /// Requests the stand-in is answering at once, and the most at any time.
    final class InFlight: Sendable {
        private let counts = Mutex<(now: Int, most: Int)>((0, 0))
        var most: Int { counts.withLock { $0.most } }
        func enter() { counts.withLock { $0.now += 1; $0.most = max($0.most, $0.now) } }
        func leave() { counts.withLock { $0.now -= 1 } }
    }

    static func send(_ effect: ProviderEffect, count: Int, from first: Int = 0, token: String = "a1") async -> [SendResult] {
        await withTaskGroup(of: SendResult.self) { group in
            for index in first..<(first + count) {
                group.addTask { await effect.perform(ProviderClientTests.attempt(.apns, token: token, id: "d\(index)~push~phone~1")) }
            }
            var all: [SendResult] = []
            for await result in group { all.append(result) }
            return all
        }
    }

    /// A server allowing 4 streams per connection: 48 calls at once are all answered, never more
    /// than 4 per connection on the server, and the pool opens no more than its 2 connections.
    @Test func theServersStreamLimitIsKept() async throws {
        let inFlight = InFlight()
        try await Setup.with(maximumConcurrentStreams: 4, connections: 2, hold: .milliseconds(50), inFlight: inFlight) { setup in
            let first = await Self.send(setup.effect, count: 48)
            let second = await Self.send(setup.effect, count: 48, from: 100)
            let results = first + second
            #expect(results.allSatisfy { $0.outcome == .accepted }, "\(results.filter { $0.outcome != .accepted }.map { $0.reason ?? "-" })")
            #expect(setup.apns.delivered.count == 96)
            #expect(setup.server.connectionsAccepted <= 2)
            #expect(inFlight.most <= 4 * setup.server.connectionsAccepted, "at most \(inFlight.most) at once")
        }
    }

    /// The connection's receive window is given back: answers whose bodies add up to more than
    /// the 64 KiB a connection starts with all arrive (4 000 refusals of ~26 bytes each).
    @Test func answerBodiesBeyondTheConnectionWindowAllArrive() async throws {
        try await Setup.with(connections: 1) { setup in
            setup.apns.script("bad", Array(repeating: .badDeviceToken, count: 4000))
            let refused = await withTaskGroup(of: Bool.self) { group in
                var next = 0, refused = 0
                func add() {
                    let index = next
                    next += 1
                    group.addTask {
                        let result = await setup.effect.perform(ProviderClientTests.attempt(.apns, token: "bad", id: "d\(index)~push~phone~1"))
                        return result.status == 400 && result.reason == "BadDeviceToken"
                    }
                }
                for _ in 0..<64 { add() }
                for await ok in group {
                    if ok { refused += 1 }
                    if next < 4000 { add() }
                }
                return refused
            }
            #expect(refused == 4000)
            #expect(setup.server.connectionsAccepted == 1)
        }
    }

    /// GOAWAY: the connection takes no new calls, closes when its streams are done, and the next
    /// calls go on a new one.
    @Test func aConnectionTheServerSendsGoAwayOnIsReplaced() async throws {
        try await Setup.with { setup in
            #expect(await setup.effect.perform(ProviderClientTests.attempt(.apns, token: "a1")).outcome == .accepted)
            try await setup.server.goAway()
            var results: [SendResult] = []
            for index in 1...50 where setup.server.connectionsAccepted < 2 {
                results.append(await setup.effect.perform(ProviderClientTests.attempt(.apns, token: "a1", id: "d\(index)~push~phone~1")))
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(setup.server.connectionsAccepted == 2)
            // A call written as the GOAWAY crossed it is refused unprocessed: retryable, and safe to repeat.
            #expect(results.allSatisfy { $0.outcome == .accepted || ($0.outcome == .retryable && $0.reason == "not processed") },
                    "\(results.map { $0.reason ?? "accepted" })")
            #expect(await setup.effect.perform(ProviderClientTests.attempt(.apns, token: "a1", id: "last~push~phone~1")).outcome == .accepted)
        }
    }

    /// A lost connection fails its calls at once (retryable, no waiting for the timeout), and the
    /// next call connects again.
    /// The reason tells the two apart: the call's timeout (far beyond the test's time limit
    /// here) would end it as "timeout", not "connection closed". No wall-clock bound: a loaded
    /// CI machine once took 26 s to get this far.
    @Test func aLostConnectionFailsItsCallsAndTheNextCallReconnects() async throws {
        try await Setup.with(requestTimeout: 600) { setup in
            setup.apns.script("held", [.slow(300)])
            async let held = setup.effect.perform(ProviderClientTests.attempt(.apns, token: "held"))
            while setup.apns.requests.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
            await setup.server.dropConnections()
            let lost = await held
            #expect(lost.outcome == .retryable && lost.status == nil && lost.reason == "connection closed", "\(lost.reason ?? "-")")
            #expect(await setup.effect.perform(ProviderClientTests.attempt(.apns, token: "a1", id: "d2~push~phone~1")).outcome == .accepted)
            #expect(setup.server.connectionsAccepted == 2)
        }
    }

    /// TLS is verified against the configured CA: a server whose certificate another CA signed
    /// gets nothing, and the attempt is retryable ("tls error").
    @Test func aServerOutsideTheConfiguredAuthorityIsNotTrusted() async throws {
        try await Setup.with(trust: try TestCertificateAuthority()) { setup in
            let result = await setup.effect.perform(ProviderClientTests.attempt(.apns, token: "a1"))
            #expect(result.outcome == .retryable && result.reason == "tls error", "\(result.reason ?? "-")")
            #expect(setup.apns.requests.isEmpty)
        }
    }
}
