import Foundation
import JWTKit

/// The RS256 assertion (RFC 7523) a Google service account trades for an OAuth2 access token:
/// `iss` = the account's e-mail, `scope` = FCM's, `aud` = the token endpoint, valid one hour,
/// `kid` = the key file's `private_key_id`.
struct ServiceAccountAssertion: Sendable {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    static let validity: TimeInterval = 3600

    let account: ServiceAccount
    private let key: JWTKit.Insecure.RSA.PrivateKey

    init(account: ServiceAccount) throws {
        self.account = account
        do { key = try JWTKit.Insecure.RSA.PrivateKey(pem: account.privateKey.reveal) } catch {
            throw ProviderSettings.Invalid(description: "the service account's private_key is not an RSA key (2048 bits or more) in PEM")
        }
    }

    /// The assertion signed at `issued` (whole seconds).
    func signed(issued: Date) async throws -> String {
        let claims = ProviderJWT.GoogleAssertionClaims(
            iss: IssuerClaim(value: account.clientEmail), scope: Self.scope, aud: AudienceClaim(value: account.tokenURI),
            iat: IssuedAtClaim(value: issued), exp: ExpirationClaim(value: issued.addingTimeInterval(Self.validity)))
        return try await ProviderJWT.sign(claims, key: key, kid: account.privateKeyId)
    }
}
