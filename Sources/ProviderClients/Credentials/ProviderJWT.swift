import Foundation
import JWTKit

/// The JWTs the providers want, signed by jwt-kit: ES256 with `kid` for the APNs provider
/// token, RS256 for the Google service-account assertion (RFC 7523). Times are encoded as whole
/// seconds, as both providers expect `iat` / `exp`.
enum ProviderJWT {
    /// APNs provider token claims: the team id and when it was signed (Apple refuses it an
    /// hour after `iat`).
    struct APNsClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim

        /// Apple verifies the token; signing has nothing to check.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// The service account's assertion for Google's OAuth2 token endpoint.
    struct GoogleAssertionClaims: JWTPayload {
        var iss: IssuerClaim
        var scope: String
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim

        /// Google verifies the assertion; signing has nothing to check.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    static func sign(_ claims: APNsClaims, key: ES256PrivateKey, kid: String) async throws -> String {
        let keys = JWTKeyCollection(defaultJWTSerializer: serializer)
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid), serializer: serializer)
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    static func sign(_ claims: GoogleAssertionClaims, key: JWTKit.Insecure.RSA.PrivateKey, kid: String?) async throws -> String {
        let keys = JWTKeyCollection(defaultJWTSerializer: serializer)
        await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid.map { JWKIdentifier(string: $0) }, serializer: serializer)
        return try await keys.sign(claims, kid: kid.map { JWKIdentifier(string: $0) })
    }

    /// jwt-kit's serializer with `iat` / `exp` as integers (its default writes a number that
    /// may carry a fraction).
    private static var serializer: DefaultJWTSerializer {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .integerSecondsSince1970
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return DefaultJWTSerializer(jsonEncoder: encoder)
    }
}
