public import Foundation
import Synchronization

/// A stand-in for a Resend-compatible `POST /emails`: checks the API key, the message and the
/// RFC 8058 headers, and honours `Idempotency-Key` (a repeated key is answered with the first
/// email's id and sends nothing).
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
        var scripts: [String: [Answer]] = [:]
        var sent: [Sent] = []
        var idByKey: [String: String] = [:]
        var requests = 0
    }

    public let apiKey: String
    private let book = Mutex(Book())

    public init(apiKey: String = "re_test_" + UUID().uuidString) { self.apiKey = apiKey }

    public func script(_ address: String, _ answers: [Answer]) { book.withLock { $0.scripts[address, default: []] += answers } }
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
        if let key, let id = book.withLock({ $0.idByKey[key] }) { return .json(200, ["id": id]) }
        let answer: Answer = book.withLock { book in
            guard var queue = book.scripts[address], !queue.isEmpty else { return .success }
            let next = queue.removeFirst()
            book.scripts[address] = queue
            return next
        }
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
            if let key { book.idByKey[key] = id }
        }
        var response = FakeResponse.json(200, ["id": id])
        response.delay = delay
        return response
    }

    private func error(_ status: Int, _ name: String) -> FakeResponse {
        .json(status, ["statusCode": status, "name": name, "message": name.replacingOccurrences(of: "_", with: " ")])
    }
}
