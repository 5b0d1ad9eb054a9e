import Foundation
import JWTKit

/// How a stand-in provider checks a JWT it was handed, with jwt-kit as the real provider would:
/// the header's `alg` and `kid` must be the expected ones (jwt-kit would fall back to its default
/// key for an unknown `kid`), and the signature must verify with the one public key it holds.
/// The claims' own rules (issuer, age) are the caller's, with its own clock.
struct JWTCheck: Sendable {
    let algorithm: String
    let keyId: String?
    let keys: JWTKeyCollection

    /// The claims of `token` if its header and signature pass, else `nil`.
    func claims<Claims: JWTPayload>(of token: String, as _: Claims.Type) async -> Claims? {
        guard let header = try? DefaultJWTParser().parse(Data(token.utf8), as: Claims.self).header,
            header.alg == algorithm, header.kid == keyId
        else { return nil }
        return try? await keys.verify(token, as: Claims.self)
    }

    static func es256(publicKey: ES256PublicKey, keyId: String) async -> JWTCheck {
        let keys = await JWTKeyCollection().add(ecdsa: publicKey, kid: JWKIdentifier(string: keyId))
        return JWTCheck(algorithm: "ES256", keyId: keyId, keys: keys)
    }

    static func rs256(publicKey: JWTKit.Insecure.RSA.PublicKey, keyId: String) async -> JWTCheck {
        let keys = await JWTKeyCollection().add(rsa: publicKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: keyId))
        return JWTCheck(algorithm: "RS256", keyId: keyId, keys: keys)
    }
}
