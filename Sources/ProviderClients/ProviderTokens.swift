import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import _CryptoExtras

/// The APNs provider token (ES256 JWT, `kid` = key id, `iss` = team id), signed once and
/// reused until `tokenLifetime` passes (Apple refuses tokens older than an hour and renewals
/// more often than every 20 minutes), or renewed at once after `ExpiredProviderToken`.
actor APNsProviderToken {
    private let settings: ProviderSettings.APNs
    private let key: P256.Signing.PrivateKey
    private let now: @Sendable () -> Date
    private var current: (token: String, issuedAt: Date)?

    init(settings: ProviderSettings.APNs, now: @escaping @Sendable () -> Date) throws {
        self.settings = settings
        self.now = now
        do { key = try P256.Signing.PrivateKey(pemRepresentation: settings.signingKey.reveal) } catch {
            throw ProviderSettings.Invalid(description: "SENDER_APNS_KEY_FILE does not hold a P-256 private key in PEM")
        }
    }

    private struct Claims: Encodable { var iss: String; var iat: Int }

    func token(renew: Bool) throws -> String {
        let time = now()
        if !renew, let current, time.timeIntervalSince(current.issuedAt) < settings.tokenLifetime { return current.token }
        let token = try JSONWebToken.es256(
            kid: settings.keyId, claims: Claims(iss: settings.teamId, iat: Int(time.timeIntervalSince1970)), key: key)
        current = (token, time)
        return token
    }
}

/// An FCM OAuth2 access token, obtained from the service account's token endpoint with an
/// RS256-signed assertion (RFC 7523) and cached until a minute before it expires. Concurrent
/// callers share one token request.
actor FCMAccessToken {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private let account: ServiceAccount
    private let key: _RSA.Signing.PrivateKey
    private let client: HTTPClient
    private let timeout: TimeInterval
    private let now: @Sendable () -> Date
    private var current: (token: String, expiresAt: Date)?
    private var pending: Task<(String, Date), any Error>?

    init(account: ServiceAccount, client: HTTPClient, timeout: TimeInterval, now: @escaping @Sendable () -> Date) throws {
        self.account = account
        self.client = client
        self.timeout = timeout
        self.now = now
        do { key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKey.reveal) } catch {
            throw ProviderSettings.Invalid(description: "the service account's private_key is not an RSA key in PEM")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var status: Int?
        var description: String
    }

    private struct Claims: Encodable { var iss: String; var scope: String; var aud: String; var iat: Int; var exp: Int }
    private struct Answer: Decodable { var access_token: String; var expires_in: Int? }

    func token(renew: Bool) async throws -> String {
        if !renew, let current, now() < current.expiresAt { return current.token }
        if let pending { return try await pending.value.0 }
        let task = Task { try await self.fetch() }
        pending = task
        defer { pending = nil }
        let (token, expiresAt) = try await task.value
        current = (token, expiresAt)
        return token
    }

    private func fetch() async throws -> (String, Date) {
        let issued = now()
        let iat = Int(issued.timeIntervalSince1970)
        let assertion = try JSONWebToken.rs256(
            kid: account.privateKeyId,
            claims: Claims(iss: account.clientEmail, scope: Self.scope, aud: account.tokenURI, iat: iat, exp: iat + 3600), key: key)
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
        let body = try await response.body.collect(upTo: 64 * 1024)
        guard response.status == .ok, let answer = try? JSONDecoder().decode(Answer.self, from: Data(body.readableBytesView)) else {
            throw Failure(status: Int(response.status.code), description: "token endpoint answered \(response.status.code)")
        }
        let lifetime = TimeInterval(max((answer.expires_in ?? 3600) - 60, 0))
        return (answer.access_token, issued.addingTimeInterval(lifetime))
    }
}
