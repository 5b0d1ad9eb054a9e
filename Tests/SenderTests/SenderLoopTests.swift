import FleetModel
import Foundation
import ProviderClients
import SenderCore
import SenderTestSupport
import Testing

/// The fold and the effect stage together, without Kafka: every attempt the fold decides is
/// performed against the stand-in providers and its answer folded back, as the worker does
/// through its inbox (issue 17 scenarios: retry then success, dead token, multi-device,
/// fallback to email).
@Suite(.timeLimit(.minutes(6))) struct SenderLoopTests {
    typealias H = SenderHarness

    /// Performs the attempts emitted since `from` and folds their answers, until none is new.
    static func pump(_ h: inout H, _ fakes: ProviderFakes, from start: inout Int) async {
        while start < h.attempts.count {
            let attempt = h.attempts[start]
            start += 1
            h.apply(.sender(.result(await fakes.effect.perform(attempt))))
        }
    }

    @Test func retryThenSuccess() async throws {
        try await ProviderFakes.with { fakes in
            fakes.apns.script("a1", [.unavailable, .tooManyRequests(retryAfterSeconds: 60)])
            var h = H(), done = 0
            h.apply(H.device("phone", .ios, token: "a1"))
            h.apply(H.delivery("d1"))
            await Self.pump(&h, fakes, from: &done)
            h.advance(by: .seconds(30))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.attempts.count == 2 && h.receipts.isEmpty)
            h.advance(by: .seconds(59))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.attempts.count == 2, "Retry-After: 60 is honoured")
            h.advance(by: .seconds(1))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.receipts.map(\.status) == [.sent] && h.receipts[0].attempts == 3)
            #expect(fakes.apns.delivered.count == 1)
        }
    }

    /// Issue 17, "provider outage of minutes (backlog drains afterwards, nothing lost)".
    @Test func aBacklogBuiltDuringAnOutageDrainsAfterIt() async throws {
        try await ProviderFakes.with { fakes in
            fakes.apns.setOutage(true)
            var h = H(), done = 0
            h.apply(H.device("phone", .ios, token: "a1"))
            for index in 0..<20 { h.apply(H.delivery("d\(index)")) }
            await Self.pump(&h, fakes, from: &done)
            for _ in 0..<6 {  // twelve minutes of outage
                h.advance(by: .minutes(2))
                await Self.pump(&h, fakes, from: &done)
            }
            #expect(h.receipts.isEmpty && fakes.apns.delivered.isEmpty)
            fakes.apns.setOutage(false)
            for _ in 0..<4 {
                h.advance(by: .minutes(5))
                await Self.pump(&h, fakes, from: &done)
            }
            #expect(h.receipts.count == 20 && h.receipts.allSatisfy { $0.status == .sent })
            #expect(Set(fakes.apns.delivered.map(\.collapseId)) == Set((0..<20).map { "d\($0)" }))
        }
    }

    @Test func aDeadTokenIsNeverUsedAgainAndTheOtherDeviceGetsIt() async throws {
        try await ProviderFakes.with { fakes in
            fakes.apns.script("a1", [.unregistered])
            var h = H(), done = 0
            h.apply(H.device("ipad", .ios, token: "a1"))
            h.apply(H.device("pixel", .android, token: "f1"))
            h.apply(H.delivery("d1"))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.receipts.map(\.status) == [.sent] && h.receipts[0].provider == .fcm)
            #expect(h.invalidations.map(\.deviceId) == ["ipad"])
            h.apply(H.delivery("d2"))
            await Self.pump(&h, fakes, from: &done)
            #expect(fakes.apns.requests.count == 1, "the dead token was tried once")
            #expect(fakes.fcm.delivered.count == 2)
        }
    }

    @Test func fallbackToEmailWhenEveryDeviceIsDead() async throws {
        try await ProviderFakes.with { fakes in
            fakes.apns.script("a1", [.badDeviceToken])
            var h = H(), done = 0
            h.apply(H.settings(emailOptIn: true))
            h.apply(H.device("phone", .ios, token: "a1"))
            h.apply(H.device("mail", .email, token: "alex@example.com"))
            h.apply(H.delivery("d1"))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.receipts.map(\.status) == [.fellBack, .sent])
            #expect(h.receipts.map(\.channel) == [.push, .email])
            #expect(fakes.email.sent.map(\.to) == [["alex@example.com"]])
        }
    }

    /// Issue 17, duplicate on timeout: the provider accepts the first try but answers after
    /// the call's limit, so the sender records a timeout and retries with a new attempt id. The
    /// retry carries the same Idempotency-Key (one per delivery and address), the provider
    /// answers it with the first email's id, and the user gets one email.
    @Test func anEmailRetriedAfterATimeoutIsSentOnce() async throws {
        // A 5 s limit and an answer held back 20 s: wide margins on a loaded machine, both ways.
        // The retry must be answered within the limit too, over a new connection: with 1 s, CI's
        // parallel suite (both cores busy) once timed the retry out as well.
        try await ProviderFakes.with(requestTimeoutMs: 5000) { fakes in
            fakes.email.script("alex@example.com", [.slow(20)])
            var h = H(), done = 0
            h.apply(H.device("mail", .email, token: "alex@example.com"))
            h.apply(H.delivery("d1", channel: .email))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.attempts.count == 1 && h.receipts.isEmpty, "the first try timed out and is to be retried")
            h.advance(by: .minutes(5))
            await Self.pump(&h, fakes, from: &done)
            #expect(h.attempts.map(\.attempt) == [1, 2] && Set(h.attempts.map(\.id)).count == 2, "attempt ids stay per try")
            #expect(h.receipts.map(\.status) == [.sent])
            #expect(fakes.email.requests == 2 && fakes.email.sent.count == 1, "the provider dropped the repeat")
            #expect(h.receipts.first?.providerId == fakes.email.sent.first?.id)
        }
    }
}
