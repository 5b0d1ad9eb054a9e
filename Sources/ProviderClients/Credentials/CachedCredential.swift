import Foundation

/// A bearer credential (an APNs provider token, an FCM access token) and the instant it stops
/// being used. Whether to reuse it is decided from a time passed in, never from a clock read
/// here, so the refresh rules are tested with any clock.
struct CachedCredential: Sendable, Equatable {
    var value: String
    var issuedAt: Date
    /// From this instant on the credential is replaced before the next call.
    var replaceAt: Date

    func isUsable(at time: Date) -> Bool { time < replaceAt }
}
