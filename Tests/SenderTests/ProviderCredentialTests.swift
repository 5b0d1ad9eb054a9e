import Foundation
@testable import ProviderClients
import SenderTestSupport
import Synchronization
import Testing

/// A clock a test moves by hand: the credentials' refresh rules read only the clock they are
/// given, so their windows are walked through without waiting.
final class ManualClock: Sendable {
    private let time: Mutex<Date>
    init(_ start: Date) { time = Mutex(start) }
    var now: Date { time.withLock { $0 } }
    func advance(by seconds: TimeInterval) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var read: @Sendable () -> Date { { [self] in now } }
}

/// The provider JWTs signed with jwt-kit (issue 17 "Providers, real protocols"): who can verify
/// them, when the APNs provider token is renewed, how long an FCM access token is kept.
@Suite(.timeLimit(.minutes(6))) struct ProviderCredentialTests {
    static let start = Date(timeIntervalSince1970: 1_795_000_000)

    static func apnsSettings(_ fake: FakeAPNs, lifetime: TimeInterval = 40 * 60) -> ProviderSettings.APNs {
        .init(endpoint: "https://apns.invalid", keyId: fake.keyId, teamId: fake.teamId, signingKey: Secret(fake.signingKeyPEM),
            tokenLifetime: lifetime)
    }

    @Test func theAPNsProviderTokenVerifiesWithTheTeamKeyAndIsRefusedWithAnother() async throws {
        let clock = ManualClock(Self.start)
        let apple = FakeAPNs(now: clock.read), otherTeam = FakeAPNs(now: clock.read)
        let token = try await APNsProviderToken(settings: Self.apnsSettings(apple), now: clock.read).token(renew: false)
        #expect(await apple.verify(jwt: token) == .valid(iat: Int(Self.start.timeIntervalSince1970)))
        #expect(await otherTeam.verify(jwt: token) == .invalid, "signed by another key")
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let tampered = parts[0] + "." + parts[1] + "." + String(parts[2].reversed())
        #expect(await apple.verify(jwt: tampered) == .invalid)
    }

    @Test func theFCMAssertionVerifiesWithTheServiceAccountKeyAndIsRefusedWithAnother() async throws {
        let google = try FakeFCM(), otherAccount = try FakeFCM()
        let account = try ServiceAccount(json: Data(google.serviceAccountJSON(baseURL: "https://oauth.invalid").utf8))
        let assertion = try await ServiceAccountAssertion(account: account).signed(issued: Self.start)
        #expect(await google.accepts(assertion: assertion))
        #expect(!(await otherAccount.accepts(assertion: assertion)), "signed by another account's key")
    }

    @Test func theAPNsProviderTokenIsKeptForItsLifetimeThenRenewed() async throws {
        let clock = ManualClock(Self.start)
        let apple = FakeAPNs(now: clock.read)
        let tokens = try APNsProviderToken(settings: Self.apnsSettings(apple, lifetime: 40 * 60), now: clock.read)
        let first = try await tokens.token(renew: false)
        clock.advance(by: 40 * 60 - 1)
        #expect(try await tokens.token(renew: false) == first, "reused until its lifetime has passed")
        clock.advance(by: 1)
        let second = try await tokens.token(renew: false)
        #expect(second != first, "renewed once 40 minutes have passed")
        #expect(await apple.verify(jwt: second) == .valid(iat: Int(clock.now.timeIntervalSince1970)))
        clock.advance(by: 60)
        let third = try await tokens.token(renew: true)
        #expect(third != second, "renewed at once when APNs answered ExpiredProviderToken")
        #expect(try await tokens.token(renew: false) == third)
    }

    @Test func concurrentCallersShareOneProviderToken() async throws {
        let clock = ManualClock(Self.start)
        let tokens = try APNsProviderToken(settings: Self.apnsSettings(FakeAPNs(now: clock.read)), now: clock.read)
        let all = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<32 { group.addTask { try await tokens.token(renew: false) } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(all.count == 1, "one signing for every caller, not one per call (Apple: TooManyProviderTokenUpdates)")
    }

    static let lifetimes: [(TimeInterval, Bool)] = [(19 * 60, false), (20 * 60, true), (60 * 60, true), (61 * 60, false)]

    @Test(arguments: lifetimes)
    func theAPNsTokenLifetimeMustLieBetween20And60Minutes(lifetime: TimeInterval, allowed: Bool) throws {
        let settings = Self.apnsSettings(FakeAPNs(), lifetime: lifetime)
        if allowed {
            _ = try APNsProviderToken(settings: settings, now: { Self.start })
        } else {
            #expect(throws: ProviderSettings.Invalid.self) { _ = try APNsProviderToken(settings: settings, now: { Self.start }) }
        }
    }

    @Test func anFCMAccessTokenIsCachedUntilAMinuteBeforeItExpires() async throws {
        let clock = ManualClock(Self.start)
        try await ProviderFakes.with(now: clock.read) { fakes in
            // The fake's tokens last 3599 s: replaced from 3539 s after they were issued.
            #expect(await fakes.effect.perform(ProviderClientTests.attempt(.fcm, token: "t1")).outcome == .accepted)
            clock.advance(by: 3539 - 1)
            #expect(await fakes.effect.perform(ProviderClientTests.attempt(.fcm, token: "t2", id: "d1~push~phone~2")).outcome == .accepted)
            #expect(fakes.fcm.tokenRequests == 1, "still cached a second before the margin")
            clock.advance(by: 1)
            #expect(await fakes.effect.perform(ProviderClientTests.attempt(.fcm, token: "t3", id: "d1~push~phone~3")).outcome == .accepted)
            #expect(fakes.fcm.tokenRequests == 2, "fetched again a minute before expiry")
        }
    }

    @Test func theAPNsClientRenewsItsTokenOnItsOwnClock() async throws {
        let clock = ManualClock(Self.start)
        try await ProviderFakes.with(now: clock.read) { fakes in
            let steps: [TimeInterval] = [0, 39 * 60, 60, 39 * 60]
            for (index, step) in steps.enumerated() {
                clock.advance(by: step)
                let result = await fakes.effect.perform(ProviderClientTests.attempt(.apns, token: "a1", id: "d1~push~phone~\(index + 1)"))
                #expect(result.outcome == .accepted, "call \(index + 1): \(result.reason ?? "")")
            }
            let tokens = Set(fakes.apns.requests.compactMap { $0.header("authorization") })
            #expect(tokens.count == 2, "one token for the first 40 minutes, a second after")
        }
    }
}
