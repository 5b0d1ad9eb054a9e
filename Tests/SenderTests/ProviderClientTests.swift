import FleetModel
import Foundation
import Logging
import Prometheus
import ProviderClients
import SenderCore
import SenderTestSupport
import Testing

/// The provider clients against stand-ins that speak the real protocols (TLS + HTTP/2, ES256
/// provider JWT, OAuth2 with an RS256 assertion, Idempotency-Key), and what each answer
/// becomes (issue 17, "What each answer means").
@Suite(.timeLimit(.minutes(6))) struct ProviderClientTests {
    static func attempt(
        _ provider: SendProvider, token: String, id: String = "d1~push~phone~1", body: String = "Keep your streak!",
        refresh: Bool = false
    ) -> SendAttempt {
        SendAttempt(
            id: id, userId: "u1", deliveryId: "d1", notificationId: "n1", attempt: 1, provider: provider, deviceId: "phone",
            token: token, app: provider == .apns ? "com.fitcircle.app" : provider == .fcm ? "fitcircle-test" : "",
            notification: "fitcircle.daily_checkin", category: "REMINDER", title: "Daily Check-in Reminder", body: body,
            deepLink: "fitcircle://checkin", expiresAt: Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000),
            refreshCredentials: refresh)
    }

    @Test func apnsAcceptsOverHTTP2WithAVerifiedProviderToken() async throws {
        try await ProviderFakes.with { fakes in
            let attempt = Self.attempt(.apns, token: "a1b2c3")
            let result = await fakes.effect.perform(attempt)
            #expect(result.outcome == .accepted && result.status == 200)
            #expect(result.id == "result:d1~push~phone~1")
            let delivered = fakes.apns.delivered
            #expect(delivered.count == 1)
            #expect(delivered.first?.deviceToken == "a1b2c3" && delivered.first?.topic == "com.fitcircle.app")
            #expect(delivered.first?.collapseId == "d1")
            #expect(result.providerId == delivered.first?.apnsId)
            #expect(delivered.first?.payload == Data(ProviderPayloads.apns(MessageContent(attempt))))
            let request = try #require(fakes.apns.requests.first)
            #expect(request.header("apns-push-type") == "alert" && request.header("apns-priority") == "10")
            #expect(request.header("apns-expiration") == String(attempt.expiresAt.secondsSinceEpoch))
            // The same attempt carries the same apns-id every time it is sent.
            _ = await fakes.effect.perform(attempt)
            #expect(fakes.apns.delivered.map(\.apnsId) == [delivered[0].apnsId, delivered[0].apnsId])
        }
    }

    /// The effect stage keeps many calls in flight: concurrent streams on one HTTP/2
    /// connection each get their own answer.
    @Test func concurrentCallsShareTheConnectionAndEachGetsItsAnswer() async throws {
        // A generous limit: this is about every stream being answered, not about speed.
        try await ProviderFakes.with(requestTimeoutMs: 60_000) { fakes in
            let results = await withTaskGroup(of: SendResult.self) { group in
                for index in 0..<32 {
                    group.addTask { await fakes.effect.perform(Self.attempt(.apns, token: "a\(index % 8)", id: "d\(index)~push~phone~1")) }
                }
                var all: [SendResult] = []
                for await result in group { all.append(result) }
                return all
            }
            #expect(results.count == 32 && results.allSatisfy { $0.outcome == .accepted })
            #expect(Set(fakes.apns.delivered.map(\.apnsId)).count == 32)
        }
    }

    @Test func apnsAnswersMapAsTheIssueLists() async throws {
        try await ProviderFakes.with { fakes in
            fakes.apns.script("dead", [.unregistered])
            fakes.apns.script("bad", [.badDeviceToken])
            fakes.apns.script("busy", [.tooManyRequests(retryAfterSeconds: 120)])
            fakes.apns.script("down", [.unavailable])
            fakes.apns.script("oops", [.internalError])
            let dead = await fakes.effect.perform(Self.attempt(.apns, token: "dead"))
            #expect(dead.outcome == .invalidToken && dead.status == 410 && dead.reason == "Unregistered")
            #expect(await fakes.effect.perform(Self.attempt(.apns, token: "bad")).outcome == .invalidToken)
            let busy = await fakes.effect.perform(Self.attempt(.apns, token: "busy"))
            #expect(busy.outcome == .retryable && busy.status == 429 && busy.retryAfterMs == 120_000)
            #expect(await fakes.effect.perform(Self.attempt(.apns, token: "down")).outcome == .retryable)
            #expect(await fakes.effect.perform(Self.attempt(.apns, token: "oops")).outcome == .retryable)
            let big = await fakes.effect.perform(Self.attempt(.apns, token: "a1", body: String(repeating: "x", count: 5000)))
            #expect(big.outcome == .rejected && big.status == 413 && big.reason == "PayloadTooLarge")
            #expect(fakes.apns.delivered.isEmpty)
        }
    }

    @Test func anExpiredProviderTokenIsRenewedWhenTheAttemptAsks() async throws {
        try await ProviderFakes.with { fakes in
            #expect(await fakes.effect.perform(Self.attempt(.apns, token: "a1")).outcome == .accepted)
            fakes.apns.expireProviderTokens()
            let refused = await fakes.effect.perform(Self.attempt(.apns, token: "a1", id: "d1~push~phone~2"))
            #expect(refused.outcome == .credentialsExpired && refused.reason == "ExpiredProviderToken")
            let renewed = await fakes.effect.perform(Self.attempt(.apns, token: "a1", id: "d1~push~phone~3", refresh: true))
            #expect(renewed.outcome == .accepted)
        }
    }

    @Test func aSlowOrAbsentProviderIsRetryable() async throws {
        // Wide margins (a 1 s timeout, an answer held back 20 s): CI's parallel suite loads both
        // cores, and a connection set up under load must not count as the provider's slowness.
        try await ProviderFakes.with(requestTimeoutMs: 1000) { fakes in
            fakes.apns.script("slow", [.slow(20)])
            let slow = await fakes.effect.perform(Self.attempt(.apns, token: "slow"))
            #expect(slow.outcome == .retryable && slow.status == nil && slow.reason == "timeout",
                    "outcome \(slow.outcome), status \(slow.status.map(String.init) ?? "none"), reason \(slow.reason ?? "none")")
            // A provider that is not there at all: the port of a server that was stopped.
            let closed = try await FakeHTTPServer.start(authority: fakes.authority) { _ in FakeResponse(status: 200) }
            try await closed.stop()
            let settings = ProviderSettings(
                apns: .init(endpoint: closed.baseURL, keyId: fakes.apns.keyId, teamId: fakes.apns.teamId, signingKey: Secret(fakes.apns.signingKeyPEM)),
                extraTrustRootsPEM: fakes.authority.rootPEM, requestTimeout: 2)
            let effect = try ProviderEffect(settings: settings, logger: Logger(label: "sender-tests"))
            let gone = await effect.perform(Self.attempt(.apns, token: "a1", id: "d1~push~phone~2"))
            #expect(gone.outcome == .retryable && gone.status == nil && gone.reason != nil)
            try await effect.shutdown()
        }
    }

    @Test func fcmGetsOneAccessTokenAndMapsItsErrors() async throws {
        try await ProviderFakes.with { fakes in
            fakes.fcm.script("gone", [.unregistered])
            fakes.fcm.script("other", [.senderIdMismatch])
            fakes.fcm.script("bad", [.invalidArgument])
            fakes.fcm.script("down", [.unavailable(retryAfterSeconds: 30)])
            let sent = await fakes.effect.perform(Self.attempt(.fcm, token: "ok"))
            #expect(sent.outcome == .accepted && sent.providerId == "projects/fitcircle-test/messages/1")
            #expect(await fakes.effect.perform(Self.attempt(.fcm, token: "gone")).outcome == .invalidToken)
            let mismatch = await fakes.effect.perform(Self.attempt(.fcm, token: "other"))
            #expect(mismatch.outcome == .invalidToken && mismatch.reason == "SENDER_ID_MISMATCH")
            #expect(await fakes.effect.perform(Self.attempt(.fcm, token: "bad")).outcome == .rejected)
            let down = await fakes.effect.perform(Self.attempt(.fcm, token: "down"))
            #expect(down.outcome == .retryable && down.retryAfterMs == 30_000)
            #expect(fakes.fcm.tokenRequests == 1, "the access token is cached until it expires")
            let message = try #require(fakes.fcm.delivered.first?.message)
            let json = try #require(try JSONSerialization.jsonObject(with: message) as? [String: Any])
            let android = (json["message"] as? [String: Any])?["android"] as? [String: Any]
            #expect(android?["priority"] as? String == "high" && (android?["ttl"] as? String)?.hasSuffix("s") == true)
        }
    }

    @Test func emailCarriesOneClickUnsubscribeAndIsSentOncePerAttempt() async throws {
        try await ProviderFakes.with { fakes in
            let attempt = Self.attempt(.email, token: "alex@example.com", id: "d1~email~mail~1")
            let first = await fakes.effect.perform(attempt)
            let again = await fakes.effect.perform(attempt)
            #expect(first.outcome == .accepted && again.outcome == .accepted && first.providerId == again.providerId)
            #expect(fakes.email.sent.count == 1 && fakes.email.requests == 2)
            let sent = try #require(fakes.email.sent.first)
            #expect(sent.to == ["alex@example.com"] && sent.subject == "Daily Check-in Reminder")
            #expect(sent.headers["List-Unsubscribe"] == "<https://fitcircle.test/unsubscribe?user=u1>")
            #expect(sent.headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click")
            fakes.email.script("busy@example.com", [.rateLimited(retryAfterSeconds: 2)])
            let busy = await fakes.effect.perform(Self.attempt(.email, token: "busy@example.com", id: "d2~email~mail~1"))
            #expect(busy.outcome == .retryable && busy.retryAfterMs == 2000 && busy.reason == "rate_limit_exceeded")
        }
    }

    @Test func secretsNeverPrint() throws {
        let secret = Secret("-----BEGIN PRIVATE KEY-----abc")
        #expect("\(secret)" == "<redacted>" && String(reflecting: secret) == "<redacted>")
        let settings = try ProviderSettings.fromEnvironment(
            ["SENDER_EMAIL_API_KEY_FILE": "/k", "SENDER_EMAIL_FROM": "a@b.c", "SENDER_EMAIL_UNSUBSCRIBE_URL": "https://u"]
        ) { _ in "re_live_secret" }
        #expect(!String(describing: settings).contains("re_live_secret"))
        #expect(settings.email?.apiKey.reveal == "re_live_secret")
    }

    @Test func everySenderVariableIsInTheREADME() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let missing = ProviderSettings.variables.map(\.name).filter { !text.contains("`\($0)`") }
        #expect(missing.isEmpty, "README.md does not mention \(missing)")
    }

    @Test func missingSettingsAreNamed() {
        #expect(throws: ProviderSettings.Invalid.self) {
            try ProviderSettings.fromEnvironment(["SENDER_APNS_ENDPOINT": "https://x"]) { _ in "" }
        }
        do {
            _ = try ProviderSettings.fromEnvironment(["SENDER_APNS_ENDPOINT": "https://x", "SENDER_APNS_KEY_ID": "k"]) { _ in "" }
        } catch {
            #expect("\(error)" == "SENDER_APNS_TEAM_ID is required when APNs is configured")
        }
        #expect(throws: ProviderSettings.Invalid.self) {
            try ProviderSettings.fromEnvironment(["SENDER_REQUEST_TIMEOUT_MS": "soon"]) { _ in "" }
        }
    }
}

/// The effect's metrics, as Prometheus serves them (issue 17, "Operations").
@Suite(.timeLimit(.minutes(6))) struct SenderMetricsTests {
    @Test func callsAreCountedByProviderAndOutcomeWithTheirLatency() async throws {
        try await ProviderFakes.with { fakes in
            let registry = PrometheusCollectorRegistry()
            let settings = try ProviderSettings.fromEnvironment([
                "SENDER_APNS_ENDPOINT": fakes.servers[0].baseURL, "SENDER_APNS_KEY_ID": fakes.apns.keyId,
                "SENDER_APNS_TEAM_ID": fakes.apns.teamId, "SENDER_APNS_KEY_FILE": "/k", "SENDER_CA_FILE": "/ca",
            ]) { $0 == "/k" ? fakes.apns.signingKeyPEM : fakes.authority.rootPEM }
            let effect = try ProviderEffect(
                settings: settings, logger: Logger(label: "sender-tests"),
                metrics: SenderMetrics(factory: PrometheusMetricsFactory(registry: registry)))
            fakes.apns.script("dead", [.unregistered])
            fakes.apns.script("stale", [.expiredProviderToken])
            _ = await effect.perform(ProviderClientTests.attempt(.apns, token: "a1"))
            _ = await effect.perform(ProviderClientTests.attempt(.apns, token: "dead"))
            _ = await effect.perform(ProviderClientTests.attempt(.apns, token: "stale"))
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            let text = String(decoding: buffer, as: UTF8.self)
            #expect(text.contains(#"sender_attempts_total{provider="apns",outcome="accepted"} 1"#))
            #expect(text.contains(#"sender_attempts_total{provider="apns",outcome="invalid_token"} 1"#))
            #expect(text.contains(#"sender_attempts_total{provider="apns",outcome="credentials_expired"} 1"#))
            #expect(text.contains(#"sender_auth_failures_total{provider="apns"} 1"#))
            #expect(text.contains(#"sender_provider_latency_seconds_count{provider="apns"} 3"#))
            try await effect.shutdown()
        }
    }
}
