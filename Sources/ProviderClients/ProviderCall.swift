import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// What one HTTP call to a provider returned.
struct ProviderReply {
    var status: Int
    var headers: HTTPHeaders
    var body: Data
}

extension HTTPClient {
    /// POSTs `body` and collects the answer (at most 64 KiB: providers' answers are small).
    func post(_ url: String, headers: HTTPHeaders, body: [UInt8], timeout: TimeInterval) async throws -> ProviderReply {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers = headers
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
        let collected = try await response.body.collect(upTo: 64 * 1024)
        return ProviderReply(status: Int(response.status.code), headers: response.headers, body: Data(collected.readableBytesView))
    }
}

enum AttemptIdentity {
    /// A UUID (the form `apns-id` must have) derived from the attempt id: the same attempt
    /// always carries the same `apns-id`.
    ///
    /// Formatted by Foundation's `UUID` (upper-case, 8-4-4-4-12): a `String(format:)` per byte
    /// was 8 % of the client's CPU per send (SenderBenchmark, perf).
    static func uuid(for attemptId: String) -> String {
        let digest = SHA256.hash(data: Array(attemptId.utf8))
        return digest.withUnsafeBytes { raw -> String in
            var b = Array(raw.prefix(16))
            b[6] = (b[6] & 0x0F) | 0x50  // version 5 (name-based, SHA)
            b[8] = (b[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
                .uuidString
        }
    }

    /// `apns-collapse-id` may have at most 64 bytes: the delivery id, or its digest when longer.
    static func collapseId(for deliveryId: String) -> String {
        if deliveryId.utf8.count <= 64 { return deliveryId }
        return hex(SHA256.hash(data: Data(deliveryId.utf8)))
    }

    /// The email `Idempotency-Key`: one per delivery and recipient (the address's registration
    /// and the address itself), the same for every try of that delivery to that address.
    ///
    /// A call that times out after the provider accepted it is retried with a new attempt id;
    /// with this key the provider answers the retry with the first email's id instead of
    /// sending it again (Resend keeps a key 24 hours). A new address under the same
    /// registration gets a new key, so it is sent to. 70 characters (Resend allows 256), and
    /// neither the delivery id nor the address can be read from it.
    static func emailIdempotencyKey(deliveryId: String, deviceId: String, address: String) -> String {
        var material = Array(deliveryId.utf8)
        material.append(0)
        material += Array(deviceId.utf8)
        material.append(0)
        material += Array(address.utf8)
        return "email-" + hex(SHA256.hash(data: material))
    }

    /// Lower-case hexadecimal of `digest`.
    private static func hex(_ digest: SHA256Digest) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return digest.withUnsafeBytes { raw in
            String(unsafeUninitializedCapacity: raw.count * 2) { text in
                for (index, byte) in raw.enumerated() {
                    text[2 * index] = digits[Int(byte >> 4)]
                    text[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
                return raw.count * 2
            }
        }
    }
}
