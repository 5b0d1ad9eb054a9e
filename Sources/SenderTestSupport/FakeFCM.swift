public import Foundation
import CryptoExtras
import JWTKit
import Synchronization

/// A stand-in for FCM HTTP v1 and Google's OAuth2 token endpoint. It makes its own service
/// account (an RSA key), checks the RS256 assertion the sender signs with it
/// (`POST /token`), hands out access tokens, and serves `POST /v1/projects/<p>/messages:send`
/// for holders of one, answering from a script per registration token.
public final class FakeFCM: Sendable {
    public enum Answer: Sendable {
        case success
        case unregistered
        case senderIdMismatch
        case invalidArgument
        case unavailable(retryAfterSeconds: Int?)
        case internalError
    }

    public struct Delivered: Sendable, Hashable {
        public var project: String
        public var token: String
        public var message: Data
    }

    private struct Book {
        var accessTokens: Set<String> = []
        var delivered: [Delivered] = []
        var tokenRequests = 0
    }

    public let projectId: String
    public let clientEmail = "sender@fleet-tests.iam.gserviceaccount.com"
    /// The service account's key id (`private_key_id`), the assertion's `kid`.
    public let privateKeyId = "fake-key-1"
    private let privateKeyPEM: String
    private let publicKey: JWTKit.Insecure.RSA.PublicKey
    private let book = Mutex(Book())
    private let scripts = ScriptedAnswers<Answer>()

    public init(projectId: String = "fitcircle-test") throws {
        self.projectId = projectId
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.privateKeyPEM = key.pemRepresentation
        self.publicKey = try JWTKit.Insecure.RSA.PublicKey(backing: key.publicKey)
    }

    /// The service-account JSON the sender is given, with `token_uri` at this fake.
    public func serviceAccountJSON(baseURL: String) -> String {
        let object: [String: String] = [
            "type": "service_account", "project_id": projectId, "private_key_id": privateKeyId, "private_key": privateKeyPEM,
            "client_email": clientEmail, "token_uri": baseURL + "/token",
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    public func script(_ token: String, _ answers: [Answer]) { scripts.append(answers, for: token) }
    public var delivered: [Delivered] { book.withLock { $0.delivered } }
    public var tokenRequests: Int { book.withLock { $0.tokenRequests } }

    public func respond(_ request: FakeRequest) async -> FakeResponse {
        if request.method == "POST", request.path == "/token" { return await issueToken(request) }
        let prefix = "/v1/projects/", suffix = "/messages:send"
        guard request.method == "POST", request.path.hasPrefix(prefix), request.path.hasSuffix(suffix) else {
            return error(404, "NOT_FOUND", code: nil)
        }
        let project = String(request.path.dropFirst(prefix.count).dropLast(suffix.count))
        guard let auth = request.header("authorization"), auth.hasPrefix("Bearer "),
            book.withLock({ $0.accessTokens.contains(String(auth.dropFirst("Bearer ".count))) })
        else { return error(401, "UNAUTHENTICATED", code: nil) }
        guard let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let message = body["message"] as? [String: Any], let token = message["token"] as? String
        else { return error(400, "INVALID_ARGUMENT", code: "INVALID_ARGUMENT") }
        let answer = scripts.next(for: token) ?? .success
        switch answer {
        case .success: break
        case .unregistered: return error(404, "NOT_FOUND", code: "UNREGISTERED")
        case .senderIdMismatch: return error(403, "PERMISSION_DENIED", code: "SENDER_ID_MISMATCH")
        case .invalidArgument: return error(400, "INVALID_ARGUMENT", code: "INVALID_ARGUMENT")
        case .unavailable(let seconds):
            var response = error(503, "UNAVAILABLE", code: "UNAVAILABLE")
            if let seconds { response.headers["retry-after"] = String(seconds) }
            return response
        case .internalError: return error(500, "INTERNAL", code: "INTERNAL")
        }
        let number = book.withLock { book in
            book.delivered.append(Delivered(project: project, token: token, message: request.body))
            return book.delivered.count
        }
        return .json(200, ["name": "projects/\(project)/messages/\(number)"])
    }

    /// The claims Google reads from a service-account assertion.
    private struct AssertionClaims: JWTPayload {
        var iss: IssuerClaim
        var scope: String
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// Whether the token endpoint takes `assertion`: RS256 with the service account's public key
    /// and key id (jwt-kit), its e-mail as issuer, FCM's scope, the token endpoint as audience,
    /// `exp` after `iat`. Public so tests can check an assertion without sending it.
    public func accepts(assertion: String) async -> Bool {
        let check = await JWTCheck.rs256(publicKey: publicKey, keyId: privateKeyId)
        guard let claims = await check.claims(of: assertion, as: AssertionClaims.self) else { return false }
        return claims.iss.value == clientEmail && claims.scope.contains("firebase.messaging")
            && claims.aud.value.contains(where: { $0.hasSuffix("/token") }) && claims.exp.value > claims.iat.value
    }

    /// Checks the assertion (`accepts(assertion:)`) and hands out an access token.
    private func issueToken(_ request: FakeRequest) async -> FakeResponse {
        let form = Dictionary(
            String(decoding: request.body, as: UTF8.self).split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? "") : "")
            }, uniquingKeysWith: { a, _ in a })
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"] else {
            return .json(400, ["error": "unsupported_grant_type"])
        }
        guard await accepts(assertion: assertion) else { return .json(400, ["error": "invalid_grant"]) }
        let token = "ya29.fake-" + UUID().uuidString
        book.withLock {
            $0.accessTokens.insert(token)
            $0.tokenRequests += 1
        }
        return .json(200, ["access_token": token, "expires_in": 3599, "token_type": "Bearer"])
    }

    private func error(_ status: Int, _ canonical: String, code: String?) -> FakeResponse {
        var inner: [String: Any] = ["code": status, "message": canonical.lowercased(), "status": canonical]
        if let code {
            inner["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code]]
        }
        return .json(status, ["error": inner])
    }
}
