import Crypto
import Foundation
import X509

/// A certificate authority made on the spot for one test run, and a server certificate for
/// `localhost` (and any other `hostnames`) that it signed: the stand-in providers serve TLS with
/// it, and the sender trusts its root through `SENDER_CA_FILE`, exactly as it would a private CA.
public struct TestCertificateAuthority: Sendable {
    public let rootPEM: String
    public let serverCertificatePEM: String
    public let serverKeyPEM: String

    /// - Parameter hostnames: the names the server certificate is valid for besides `localhost`
    ///   (the stand-ins' service name in compose, which the sender connects to).
    public init(hostnames: [String] = []) throws {
        let names = ["localhost"] + hostnames.filter { $0 != "localhost" }
        let now = Date()
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("retention fleet sender test CA") }
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(rootKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 2 * 86_400, issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        let serverKey = P256.Signing.PrivateKey()
        let server = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(serverKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 2 * 86_400, issuer: rootName,
            subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names.map { .dnsName($0) })
            },
            issuerPrivateKey: .init(rootKey))
        rootPEM = try root.serializeAsPEM().pemString
        serverCertificatePEM = try server.serializeAsPEM().pemString
        serverKeyPEM = serverKey.pemRepresentation
    }
}
