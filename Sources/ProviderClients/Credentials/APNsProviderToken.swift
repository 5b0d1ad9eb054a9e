import Foundation
import JWTKit

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
    private var current: CachedCredential?
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
        if !renew, let current, current.isUsable(at: now()) { return current.value }
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
        current = credential
        return credential.value
    }
}
