import Crypto
import Foundation
import _CryptoExtras

/// Compact JWS (RFC 7515) signed with swift-crypto: ES256 for the APNs provider token, RS256
/// for the FCM service-account assertion. Only the encoding is done here; the signatures are
/// swift-crypto's.
enum JSONWebToken {
    struct Header: Encodable {
        var alg: String
        var kid: String?
        var typ: String?
    }

    /// `header.claims.signature` signed with ECDSA P-256 / SHA-256, the signature as JWS wants
    /// it (r ‖ s, 64 bytes).
    static func es256(kid: String, claims: some Encodable, key: P256.Signing.PrivateKey) throws -> String {
        let input = try signingInput(Header(alg: "ES256", kid: kid, typ: nil), claims)
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + base64URL(signature.rawRepresentation)
    }

    /// `header.claims.signature` signed with RSASSA-PKCS1-v1_5 / SHA-256.
    static func rs256(kid: String?, claims: some Encodable, key: _RSA.Signing.PrivateKey) throws -> String {
        let input = try signingInput(Header(alg: "RS256", kid: kid, typ: "JWT"), claims)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + base64URL(signature.rawRepresentation)
    }

    private static func signingInput(_ header: Header, _ claims: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return base64URL(try encoder.encode(header)) + "." + base64URL(try encoder.encode(claims))
    }

    static func base64URL(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URLDecode(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
