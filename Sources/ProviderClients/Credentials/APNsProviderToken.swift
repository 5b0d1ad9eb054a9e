import Foundation
import JWTKit
import Synchronization

/// The APNs provider token (ES256 JWT, `kid` = key id, `iss` = team id), signed once and reused
/// until `tokenLifetime` has passed, or renewed at once after `ExpiredProviderToken`.
///
/// Apple refuses a token an hour after it was signed and answers `TooManyProviderTokenUpdates`
/// to renewals more often than every 20 minutes, so the lifetime must lie between the two.
/// Concurrent callers that find no usable token share one signing.
actor APNsProviderToken {
    /// The lifetimes Apple allows (seconds).
    static let allowedLifetime: ClosedRange<TimeInterval> = 20 * 60...60 * 60

    private let keyId: String
    private let teamId: String
    private let lifetime: TimeInterval
    private let key: ES256PrivateKey
    private let now: @Sendable () -> Date
    /// The token in use, also readable without a hop to the actor (`cachedToken`).
    private let current = Mutex<CachedCredential?>(nil)
    private var signing: Task<CachedCredential, any Error>?

    /// - Parameter now: the clock the token's age is read from (the wall clock in the worker,
    ///   a test's own clock in tests).
    init(settings: ProviderSettings.APNs, now: @escaping @Sendable () -> Date) throws {
        guard Self.allowedLifetime.contains(settings.tokenLifetime) else {
            throw ProviderSettings.Invalid(
                description: "the APNs provider token lifetime is \(Int(settings.tokenLifetime)) s; Apple allows 1200 to 3600 s")
        }
        do { key = try ES256PrivateKey(pem: settings.signingKey.reveal) } catch {
            throw ProviderSettings.Invalid(description: "SENDER_APNS_KEY_FILE does not hold a P-256 private key in PEM")
        }
        keyId = settings.keyId
        teamId = settings.teamId
        lifetime = settings.tokenLifetime
        self.now = now
    }

    /// The token to send; `renew` replaces it even if it is not due (APNs answered
    /// `ExpiredProviderToken`).
    func token(renew: Bool) async throws -> String {
        if !renew, let cached = cachedToken() { return cached }
        if let signing { return try await signing.value.value }
        let task = Task { [keyId, teamId, key, lifetime, now] in
            let issued = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
            let claims = ProviderJWT.APNsClaims(iss: IssuerClaim(value: teamId), iat: IssuedAtClaim(value: issued))
            let token = try await ProviderJWT.sign(claims, key: key, kid: keyId)
            return CachedCredential(value: token, issuedAt: issued, replaceAt: issued.addingTimeInterval(lifetime))
        }
        signing = task
        defer { signing = nil }
        let credential = try await task.value
        current.withLock { $0 = credential }
        return credential.value
    }

    /// The token in use while it is usable, without waiting for the actor: what every call but
    /// the first and the renewals takes (an actor hop per send was a measurable part of the
    /// client's CPU).
    nonisolated func cachedToken() -> String? {
        let time = now()
        return current.withLock { credential in
            guard let credential, credential.isUsable(at: time) else { return nil }
            return credential.value
        }
    }
}
