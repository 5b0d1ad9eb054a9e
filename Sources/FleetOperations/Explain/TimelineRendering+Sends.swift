import FleetModel
import Foundation

/// How `fleetctl explain` prints what the sender did with a delivery, under the decision that
/// made it: each attempt with the provider's answer, then the receipt, or why there is none yet.
/// Device tokens and email addresses are never printed: an attempt names its device id.
extension TimelineRendering {
    /// The header line saying which sender topics the fleet lacks, if any.
    static func senderTopicsLine(_ sends: SendTrail?) -> String? {
        guard let sends, !sends.missingTopics.isEmpty else { return nil }
        let what = sends.senderAbsent ? "this fleet runs no sender: no attempts or receipts are shown" : "what they hold is not shown"
        return "sender: no topic \(sends.missingTopics.joined(separator: ", ")) (\(what))"
    }

    /// The lines under a link that delivered `delivery`.
    static func sendLines(_ trail: SendTrail, _ delivery: Delivery, indent: String) -> [String] {
        let sends = trail.sends(of: delivery)
        var lines = sends.attempts.map { indent + attemptText($0) }
        lines += sends.receipts.map { indent + receiptText($0) }
        guard sends.progress != .final else { return lines }
        if trail.senderAbsent {
            lines.append(indent + "no receipt: no sender in this fleet")
        } else if sends.progress == .notTaken {
            lines.append(indent + "no receipt yet: the sender has not taken this delivery (not running, or behind)")
        } else if let last = sends.attempts.last, last.result == nil {
            lines.append(indent + "no receipt yet: waiting for the answer to attempt \(last.attempt.attempt) (\(last.attempt.provider.rawValue) \(last.attempt.deviceId))")
        } else {
            lines.append(indent + "no receipt yet: the sender is still retrying")
        }
        return lines
    }

    /// `attempt 2 apns phone at …: retryable 503 ServiceUnavailable, retry after 30 s (answered at …)`.
    static func attemptText(_ trace: AttemptTrace) -> String {
        let attempt = trace.attempt
        var text = "attempt \(attempt.attempt) \(attempt.provider.rawValue) device \(attempt.deviceId)"
        if let at = trace.at { text += " at \(at.rfc3339)" }
        if attempt.refreshCredentials { text += " (provider token renewed)" }
        guard let result = trace.result else { return text + ": no answer recorded yet" }
        text += ": " + result.outcome.rawValue
        text += result.status.map { " \($0)" } ?? " (no HTTP answer)"
        if let reason = result.reason { text += " \(reason)" }
        if let id = result.providerId { text += ", provider id \(id)" }
        if let retryAfter = result.retryAfterMs { text += ", retry after \(retryAfter / 1000) s" }
        if let answered = trace.answeredAt { text += " (answered at \(answered.rfc3339))" }
        return text
    }

    /// `receipt push: sent via apns, provider id …, 2 attempts, at …`.
    static func receiptText(_ trace: ReceiptTrace) -> String {
        let receipt = trace.receipt
        var text = "receipt \(receipt.channel.rawValue): \(receipt.status.rawValue)"
        if let reason = receipt.reason { text += " (\(reason))" }
        if let provider = receipt.provider { text += " via \(provider.rawValue)" }
        if let id = receipt.providerId { text += ", provider id \(id)" }
        text += ", \(receipt.attempts) attempt\(receipt.attempts == 1 ? "" : "s")"
        if let at = trace.at { text += ", at \(at.rfc3339)" }
        return text
    }

    // MARK: JSON

    /// `{"progress": final|in_progress|not_taken|no_sender, "attempts": […], "receipts": [{"at", "receipt"}]}`;
    /// an attempt is `{"attempt_id", "attempt", "provider", "device_id", "at", "refresh_credentials",
    /// "result": {"outcome", "status", "reason", "provider_id", "retry_after_ms", "at"} | null}`.
    static func sendsJSON(_ trail: SendTrail, _ delivery: Delivery) -> JSONValue {
        let sends = trail.sends(of: delivery)
        let progress = sends.progress != .final && trail.senderAbsent ? "no_sender" : sends.progress.rawValue
        return .object([
            "progress": .string(progress),
            "attempts": .array(sends.attempts.map(attemptJSON)),
            "receipts": .array(sends.receipts.map { trace in
                .object(["at": timeJSON(trace.at), "receipt": recordJSON(.sender(.receipt(trace.receipt)))])
            }),
        ])
    }

    private static func attemptJSON(_ trace: AttemptTrace) -> JSONValue {
        let attempt = trace.attempt
        let result: JSONValue = trace.result.map { result in
            .object([
                "outcome": .string(result.outcome.rawValue),
                "status": result.status.map { .int(Int64($0)) } ?? .null,
                "reason": result.reason.map(JSONValue.string) ?? .null,
                "provider_id": result.providerId.map(JSONValue.string) ?? .null,
                "retry_after_ms": result.retryAfterMs.map(JSONValue.int) ?? .null,
                "at": timeJSON(trace.answeredAt),
            ])
        } ?? .null
        return .object([
            "attempt_id": .string(attempt.id), "attempt": .int(Int64(attempt.attempt)),
            "provider": .string(attempt.provider.rawValue), "device_id": .string(attempt.deviceId),
            "at": timeJSON(trace.at), "refresh_credentials": .bool(attempt.refreshCredentials), "result": result,
        ])
    }

    private static func timeJSON(_ time: Timestamp?) -> JSONValue { time.map { .string($0.rfc3339) } ?? .null }
}
