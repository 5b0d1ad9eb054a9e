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
    static func uuid(for attemptId: String) -> String {
        var bytes = Array(SHA256.hash(data: Data(attemptId.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50  // version 5 (name-based, SHA)
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // RFC 4122 variant
        let hex = bytes.map { String(format: "%02X", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

    /// `apns-collapse-id` may have at most 64 bytes: the delivery id, or its digest when longer.
    static func collapseId(for deliveryId: String) -> String {
        if deliveryId.utf8.count <= 64 { return deliveryId }
        return SHA256.hash(data: Data(deliveryId.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
