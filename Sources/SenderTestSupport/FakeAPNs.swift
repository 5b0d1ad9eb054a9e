public import Foundation
import JWTKit
import Synchronization

/// A stand-in for APNs that checks what Apple checks and answers from a script.
///
/// Each request must carry a provider JWT (`authorization: bearer …`) signed ES256 by the
/// team's key with the expected `kid` and `iss` and an `iat` under an hour old (else 403
/// `InvalidProviderToken` / `ExpiredProviderToken`), `apns-topic`, `apns-push-type`, a UUID
/// `apns-id`, and a JSON body of at most 4096 bytes (else 400 / 413 as APNs answers).
/// Accepted notifications are kept in order, so a test sees what a phone would have shown.
public final class FakeAPNs: Sendable {
    /// One scripted answer for a device token.
    public enum Answer: Sendable {
        case success
        case unregistered
        case badDeviceToken
        case tooManyRequests(retryAfterSeconds: Int)
        case unavailable
        case internalError
        case expiredProviderToken
        /// Success, after holding the answer this long.
        case slow(TimeInterval)
    }

    public struct Delivered: Sendable, Hashable {
        public var apnsId: String
        public var deviceToken: String
        public var topic: String
        public var collapseId: String?
        public var payload: Data
    }

    private struct Book {
        var delivered: [Delivered] = []
        var requests: [FakeRequest] = []
        var revokedTokens: Set<String> = []
        var outage = false
        /// Provider tokens whose signature was checked (a connection reuses one for 40 minutes).
        var verified: [String: Int] = [:]
    }

    public let keyId: String
    public let teamId: String
    /// The team's signing key (PEM), as the sender is given it (`SENDER_APNS_KEY_FILE`).
    public let signingKeyPEM: String
    private let publicKey: ES256PublicKey
    private let book = Mutex(Book())
    private let scripts = ScriptedAnswers<Answer>()
    private let now: @Sendable () -> Date

    public init(keyId: String = "KEY1234567", teamId: String = "TEAM123456", now: @escaping @Sendable () -> Date = { Date() }) {
        self.keyId = keyId
        self.teamId = teamId
        let key = ES256PrivateKey()
        self.signingKeyPEM = key.pemRepresentation
        self.publicKey = key.publicKey
        self.now = now
    }

    /// Answers the next requests for `deviceToken` with `answers` in order, then `.success`.
    public func script(_ deviceToken: String, _ answers: [Answer]) {
        scripts.append(answers, for: deviceToken)
    }

    /// Makes every provider token signed so far answer `ExpiredProviderToken`.
    public func expireProviderTokens() {
        book.withLock { book in
            for request in book.requests { if let auth = request.header("authorization") { book.revokedTokens.insert(auth) } }
        }
    }

    /// While on, every request is answered 503 `ServiceUnavailable` (a provider outage).
    public func setOutage(_ on: Bool) { book.withLock { $0.outage = on } }

    public var delivered: [Delivered] { book.withLock { $0.delivered } }
    public var requests: [FakeRequest] { book.withLock { $0.requests } }

    public func respond(_ request: FakeRequest) async -> FakeResponse {
        let outage = book.withLock { book in
            book.requests.append(request)
            return book.outage
        }
        if outage { return reason(503, "ServiceUnavailable") }
        guard request.method == "POST", request.path.hasPrefix("/3/device/") else {
            return reason(404, request.method == "POST" ? "BadPath" : "MethodNotAllowed")
        }
        let deviceToken = String(request.path.dropFirst("/3/device/".count))
        guard let authorization = request.header("authorization"), authorization.hasPrefix("bearer ") else {
            return reason(403, "MissingProviderToken")
        }
        if book.withLock({ $0.revokedTokens.contains(authorization) }) { return reason(403, "ExpiredProviderToken") }
        let verdict: Verdict
        if let iat = book.withLock({ $0.verified[authorization] }) {
            verdict = now().timeIntervalSince1970 - TimeInterval(iat) > 3600 ? .expired : .valid(iat: iat)
        } else {
            verdict = await verify(jwt: String(authorization.dropFirst("bearer ".count)))
            if case .valid(let iat) = verdict { book.withLock { $0.verified[authorization] = iat } }
        }
        switch verdict {
        case .valid: break
        case .expired: return reason(403, "ExpiredProviderToken")
        case .invalid: return reason(403, "InvalidProviderToken")
        }
        guard let topic = request.header("apns-topic"), !topic.isEmpty else { return reason(400, "MissingTopic") }
        guard request.header("apns-push-type") == "alert" || request.header("apns-push-type") == "background" else {
            return reason(400, "InvalidPushType")
        }
        guard let apnsId = request.header("apns-id"), UUID(uuidString: apnsId) != nil else { return reason(400, "BadMessageId") }
        if let priority = request.header("apns-priority"), !["5", "10", "1"].contains(priority) { return reason(400, "BadPriority") }
        if let collapse = request.header("apns-collapse-id"), collapse.utf8.count > 64 { return reason(400, "BadCollapseId") }
        if let expiration = request.header("apns-expiration"), Int(expiration) == nil { return reason(400, "BadExpirationDate") }
        guard !deviceToken.isEmpty, deviceToken.allSatisfy({ $0.isLetter || $0.isNumber }) else { return reason(400, "BadDeviceToken") }
        guard request.body.count <= 4096 else { return reason(413, "PayloadTooLarge") }
        guard (try? JSONSerialization.jsonObject(with: request.body)) is [String: Any] else { return reason(400, "PayloadEmpty") }

        let answer = scripts.next(for: deviceToken) ?? .success
        var delay: TimeInterval = 0
        switch answer {
        case .success: break
        case .slow(let seconds): delay = seconds
        case .unregistered:
            return .json(410, ["reason": "Unregistered", "timestamp": Int(now().timeIntervalSince1970 * 1000)], headers: ["apns-id": apnsId])
        case .badDeviceToken: return reason(400, "BadDeviceToken", apnsId: apnsId)
        case .tooManyRequests(let seconds):
            return .json(429, ["reason": "TooManyRequests"], headers: ["apns-id": apnsId, "retry-after": String(seconds)])
        case .unavailable: return reason(503, "ServiceUnavailable", apnsId: apnsId)
        case .internalError: return reason(500, "InternalServerError", apnsId: apnsId)
        case .expiredProviderToken: return reason(403, "ExpiredProviderToken", apnsId: apnsId)
        }
        book.withLock {
            $0.delivered.append(Delivered(
                apnsId: apnsId, deviceToken: deviceToken, topic: topic, collapseId: request.header("apns-collapse-id"), payload: request.body))
        }
        return FakeResponse(status: 200, headers: ["apns-id": apnsId], delay: delay)
    }

    private func reason(_ status: Int, _ reason: String, apnsId: String? = nil) -> FakeResponse {
        .json(status, ["reason": reason], headers: apnsId.map { ["apns-id": $0] } ?? [:])
    }

    /// What APNs makes of a provider token: `iat` is the token's, in seconds since 1970.
    public enum Verdict: Sendable, Equatable { case valid(iat: Int), expired, invalid }

    /// The claims APNs reads from a provider token.
    private struct ProviderClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// ES256 with the team's public key (jwt-kit), the header's `kid`, the claims' `iss`, and
    /// `iat` within the last hour by this fake's clock: what every request's token goes through,
    /// public so tests can check a token without sending it.
    public func verify(jwt: String) async -> Verdict {
        let check = await JWTCheck.es256(publicKey: publicKey, keyId: keyId)
        guard let claims = await check.claims(of: jwt, as: ProviderClaims.self), claims.iss.value == teamId else {
            return .invalid
        }
        let iat = Int(claims.iat.value.timeIntervalSince1970)
        return now().timeIntervalSince1970 - TimeInterval(iat) > 3600 ? .expired : .valid(iat: iat)
    }
}
