public import Foundation
import Synchronization

/// A stand-in for a Resend-compatible `POST /emails`: checks the API key, the message and the
/// RFC 8058 headers, and honours `Idempotency-Key` as Resend does: a repeat of a key within
/// 24 hours of the email it sent is answered with that email's id and sends nothing; a call
/// that was refused leaves its key free.
public final class FakeEmailAPI: Sendable {
    /// `slow`: sends (and remembers the Idempotency-Key) at once, answers after the delay, so a
    /// test can kill the caller between the send and the answer.
    public enum Answer: Sendable { case success, rateLimited(retryAfterSeconds: Int), serverError, invalid, slow(TimeInterval) }

    public struct Sent: Sendable, Hashable {
        public var id: String
        public var to: [String]
        public var subject: String
        public var text: String
        public var headers: [String: String]
    }

    private struct Book {
        var sent: [Sent] = []
        /// Each key's email and when it was sent.
        var sentByKey: [String: (id: String, at: Date)] = [:]
        var requests = 0
    }

    /// How long a key is remembered (Resend: 24 hours).
    public static let idempotencyWindow: TimeInterval = 24 * 3600

    public let apiKey: String
    private let book = Mutex(Book())
    private let scripts = ScriptedAnswers<Answer>()
    private let now: @Sendable () -> Date

    /// `now` is the clock the idempotency window is read from.
    public init(apiKey: String = "re_test_" + UUID().uuidString, now: @escaping @Sendable () -> Date = { Date() }) {
        self.apiKey = apiKey
        self.now = now
    }

    public func script(_ address: String, _ answers: [Answer]) { scripts.append(answers, for: address) }
    public var sent: [Sent] { book.withLock { $0.sent } }
    public var requests: Int { book.withLock { $0.requests } }

    public func respond(_ request: FakeRequest) -> FakeResponse {
        book.withLock { $0.requests += 1 }
        guard request.method == "POST", request.path == "/emails" else { return error(404, "not_found") }
        guard request.header("authorization") == "Bearer " + apiKey else { return error(401, "missing_api_key") }
        guard let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any],
            let from = body["from"] as? String, !from.isEmpty, let to = body["to"] as? [String], let address = to.first,
            let subject = body["subject"] as? String, let text = body["text"] as? String,
            let headers = body["headers"] as? [String: String], headers["List-Unsubscribe"]?.hasPrefix("<https://") == true,
            headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        else { return error(422, "validation_error") }
        let key = request.header("idempotency-key")
        let receivedAt = now()
        if let key, let first = book.withLock({ $0.sentByKey[key] }), receivedAt.timeIntervalSince(first.at) < Self.idempotencyWindow {
            return .json(200, ["id": first.id])
        }
        let answer = scripts.next(for: address) ?? .success
        var delay: TimeInterval = 0
        switch answer {
        case .success: break
        case .slow(let seconds): delay = seconds
        case .rateLimited(let seconds):
            var response = error(429, "rate_limit_exceeded")
            response.headers["retry-after"] = String(seconds)
            return response
        case .serverError: return error(500, "internal_server_error")
        case .invalid: return error(422, "validation_error")
        }
        let id = UUID().uuidString.lowercased()
        book.withLock { book in
            book.sent.append(Sent(id: id, to: to, subject: subject, text: text, headers: headers))
            if let key { book.sentByKey[key] = (id, receivedAt) }
        }
        var response = FakeResponse.json(200, ["id": id])
        response.delay = delay
        return response
    }

    private func error(_ status: Int, _ name: String) -> FakeResponse {
        .json(status, ["statusCode": status, "name": name, "message": name.replacingOccurrences(of: "_", with: " ")])
    }
}
