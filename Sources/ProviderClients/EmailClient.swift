import AsyncHTTPClient
import FleetModel
import Foundation
import NIOHTTP1
import SenderCore

/// A Resend-compatible email API (`POST /emails`) with one `Idempotency-Key` per delivery and
/// address (`AttemptIdentity.emailIdempotencyKey`: every try of a delivery to an address
/// carries it, so a retry after a timed-out call the provider accepted is answered, not sent
/// again) and RFC 8058 one-click unsubscribe.
struct EmailClient {
    let settings: ProviderSettings.Email
    let client: HTTPClient
    let timeout: TimeInterval

    struct Message: Encodable {
        var from: String
        var to: [String]
        var subject: String
        var text: String
        var headers: [String: String]
        var tags: [Tag]
        struct Tag: Encodable { var name: String; var value: String }
    }
    private struct Accepted: Decodable { var id: String }
    private struct ErrorBody: Decodable { var name: String?; var message: String? }

    func message(for attempt: SendAttempt) -> Message {
        let unsubscribe = settings.unsubscribeURL.replacingOccurrences(
            of: "{user_id}", with: attempt.userId.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? attempt.userId)
        var text = attempt.body
        if !attempt.deepLink.isEmpty { text += "\n\n" + attempt.deepLink }
        text += "\n\nUnsubscribe: " + unsubscribe
        return Message(
            from: settings.from, to: [attempt.token], subject: attempt.title, text: text,
            headers: ["List-Unsubscribe": "<\(unsubscribe)>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"],
            tags: [Message.Tag(name: "notification", value: String(attempt.notification.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" ? $0 : "_" }))])
    }

    func send(_ attempt: SendAttempt) async throws -> SendResult {
        var headers = HTTPHeaders()
        headers.add(name: "authorization", value: "Bearer " + settings.apiKey.reveal)
        headers.add(
            name: "idempotency-key",
            value: AttemptIdentity.emailIdempotencyKey(deliveryId: attempt.deliveryId, deviceId: attempt.deviceId, address: attempt.token))
        headers.add(name: "content-type", value: "application/json")
        let reply = try await client.post(settings.endpoint + "/emails", headers: headers, body: ProviderPayloads.encode(message(for: attempt)), timeout: timeout)
        let accepted = (200...299).contains(reply.status) ? (try? JSONDecoder().decode(Accepted.self, from: reply.body))?.id : nil
        let error = accepted == nil ? try? JSONDecoder().decode(ErrorBody.self, from: reply.body) : nil
        return SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: .email, outcome: ProviderAnswers.email(status: reply.status, errorName: error?.name), status: reply.status,
            reason: error?.name ?? (accepted == nil && !(200...299).contains(reply.status) ? "status \(reply.status)" : nil),
            providerId: accepted, retryAfterMs: ProviderAnswers.retryAfterMilliseconds(reply.headers.first(name: "retry-after")))
    }
}
