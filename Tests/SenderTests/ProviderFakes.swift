import Foundation
import Logging
import ProviderClients
import SenderTestSupport

/// The three stand-in providers on TLS + HTTP/2 with a CA made for the run, and a
/// `ProviderEffect` configured for them the way the worker is: from variables and files.
struct ProviderFakes {
    let authority: TestCertificateAuthority
    let apns: FakeAPNs
    let fcm: FakeFCM
    let email: FakeEmailAPI
    let servers: [FakeHTTPServer]
    let effect: ProviderEffect

    /// `now` is the clock the sender's credentials and the APNs fake read (a test's own clock
    /// to walk through token lifetimes).
    static func start(requestTimeoutMs: Int = 2000, now: @escaping @Sendable () -> Date = { Date() }) async throws -> ProviderFakes {
        let authority = try TestCertificateAuthority()
        let apns = FakeAPNs(now: now), fcm = try FakeFCM(), email = FakeEmailAPI()
        let apnsServer = try await FakeHTTPServer.start(authority: authority, respond: apns.respond)
        let fcmServer = try await FakeHTTPServer.start(authority: authority, respond: fcm.respond)
        let emailServer = try await FakeHTTPServer.start(authority: authority, respond: email.respond)
        let files: [String: String] = [
            "/secrets/apns.p8": apns.signingKeyPEM,
            "/secrets/fcm.json": fcm.serviceAccountJSON(baseURL: fcmServer.baseURL),
            "/secrets/email-key": email.apiKey + "\n",
            "/secrets/ca.pem": authority.rootPEM,
        ]
        let environment = [
            "SENDER_APNS_ENDPOINT": apnsServer.baseURL, "SENDER_APNS_KEY_ID": apns.keyId, "SENDER_APNS_TEAM_ID": apns.teamId,
            "SENDER_APNS_KEY_FILE": "/secrets/apns.p8",
            "SENDER_FCM_ENDPOINT": fcmServer.baseURL, "SENDER_FCM_SERVICE_ACCOUNT_FILE": "/secrets/fcm.json",
            "SENDER_EMAIL_ENDPOINT": emailServer.baseURL, "SENDER_EMAIL_API_KEY_FILE": "/secrets/email-key",
            "SENDER_EMAIL_FROM": "FitCircle <reminders@fitcircle.test>",
            "SENDER_EMAIL_UNSUBSCRIBE_URL": "https://fitcircle.test/unsubscribe?user={user_id}",
            "SENDER_CA_FILE": "/secrets/ca.pem", "SENDER_REQUEST_TIMEOUT_MS": String(requestTimeoutMs),
        ]
        let settings = try ProviderSettings.fromEnvironment(environment) { path in
            guard let text = files[path] else { throw CocoaError(.fileNoSuchFile) }
            return text
        }
        let effect = try ProviderEffect(settings: settings, logger: Logger(label: "sender-tests"), now: now)
        return ProviderFakes(
            authority: authority, apns: apns, fcm: fcm, email: email, servers: [apnsServer, fcmServer, emailServer], effect: effect)
    }

    /// Runs `body` with the fakes started and stops them whether `body` returns or throws: a
    /// client left open traps in its deinit and would take the whole test process down with it.
    /// The default request timeout is wide because these tests check answers, not speed, and
    /// CI runs them next to the broker suites on two loaded cores.
    static func with<Result>(
        requestTimeoutMs: Int = 15_000, now: @escaping @Sendable () -> Date = { Date() },
        _ body: (ProviderFakes) async throws -> Result
    ) async throws -> Result {
        let fakes = try await start(requestTimeoutMs: requestTimeoutMs, now: now)
        let result: Result
        do {
            result = try await body(fakes)
        } catch {
            try? await fakes.stop()
            throw error
        }
        try await fakes.stop()
        return result
    }

    func stop() async throws {
        try await effect.shutdown()
        for server in servers { try await server.stop() }
    }
}
