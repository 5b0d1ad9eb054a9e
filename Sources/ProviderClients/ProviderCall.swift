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
        return SHA256.hash(data: Data(deliveryId.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
