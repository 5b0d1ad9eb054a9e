import AsyncHTTPClient
import Foundation
import NIOCore

/// An FCM OAuth2 access token, obtained from the service account's token endpoint with an
/// RS256-signed assertion (RFC 7523) and cached until a minute before it expires. Concurrent
/// callers share one token request.
actor FCMAccessToken {
    /// A token is replaced this long before the expiry the endpoint announced, so no call
    /// carries one that expires in flight.
    static let expiryMargin: TimeInterval = 60

    private let assertion: ServiceAccountAssertion
    private let client: HTTPClient
    private let timeout: TimeInterval
    private let now: @Sendable () -> Date
    private var current: CachedCredential?
    private var pending: Task<CachedCredential, any Error>?

    /// - Parameter now: the clock the token's expiry is compared with (the wall clock in the
    ///   worker, a test's own clock in tests).
    init(account: ServiceAccount, client: HTTPClient, timeout: TimeInterval, now: @escaping @Sendable () -> Date) throws {
        self.assertion = try ServiceAccountAssertion(account: account)
        self.client = client
        self.timeout = timeout
        self.now = now
    }

    struct Failure: Error, CustomStringConvertible {
        var status: Int?
        var description: String
    }

    private struct Answer: Decodable { var access_token: String; var expires_in: Int? }

    func token(renew: Bool) async throws -> String {
        if !renew, let current, current.isUsable(at: now()) { return current.value }
        if let pending { return try await pending.value.value }
        let task = Task { try await self.fetch() }
        pending = task
        defer { pending = nil }
        let credential = try await task.value
        current = credential
        return credential.value
    }

    private func fetch() async throws -> CachedCredential {
        let issued = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        var request = HTTPClientRequest(url: assertion.account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(try await assertion.signed(issued: issued))"
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
        let body = try await response.body.collect(upTo: 64 * 1024)
        guard response.status == .ok, let answer = try? JSONDecoder().decode(Answer.self, from: Data(body.readableBytesView)) else {
            throw Failure(status: Int(response.status.code), description: "token endpoint answered \(response.status.code)")
        }
        let lifetime = max(TimeInterval(answer.expires_in ?? 3600) - Self.expiryMargin, 0)
        return CachedCredential(value: answer.access_token, issuedAt: issued, replaceAt: issued.addingTimeInterval(lifetime))
    }
}
