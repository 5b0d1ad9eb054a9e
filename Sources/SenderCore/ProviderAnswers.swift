public import FleetModel

/// What each provider answer means for an attempt (issue 17, "What each answer means"). Kept
/// apart from the HTTP clients so the table is tested on its own and the clients only parse.
public enum ProviderAnswers {
    /// APNs: status and the body's `reason` (Apple's "Handling notification responses").
    public static func apns(status: Int, reason: String?) -> SendOutcome {
        switch (status, reason) {
        case (200, _): .accepted
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (400, "Unregistered"): .invalidToken
        case (403, "ExpiredProviderToken"): .credentialsExpired
        case (413, _), (400, "PayloadTooLarge"): .rejected
        case (429, _), (500, _), (503, _): .retryable
        case (500...599, _): .retryable
        default: .rejected
        }
    }

    /// FCM HTTP v1: status, the error's canonical `status` and the `FcmError` detail's
    /// `errorCode`.
    public static func fcm(status: Int, errorStatus: String?, errorCode: String?) -> SendOutcome {
        if status == 200 { return .accepted }
        switch errorCode ?? errorStatus {
        case "UNREGISTERED", "SENDER_ID_MISMATCH": return .invalidToken
        case "INVALID_ARGUMENT": return .rejected
        case "UNAVAILABLE", "INTERNAL", "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED": return .retryable
        case "UNAUTHENTICATED": return .credentialsExpired
        default: break
        }
        switch status {
        case 401: return .credentialsExpired
        case 404: return .invalidToken  // NOT_FOUND without a detail: the registration is gone
        case 429, 500...599: return .retryable
        default: return .rejected
        }
    }

    /// A Resend-compatible email API: status and the error's `name`.
    public static func email(status: Int, errorName: String?) -> SendOutcome {
        switch status {
        case 200...299: .accepted
        // Another request with the same Idempotency-Key is still in progress: ask again later.
        case 409 where errorName == "concurrent_idempotent_requests": .retryable
        case 429, 500...599: .retryable
        default: .rejected
        }
    }

    /// A call that got no HTTP answer (connection refused or reset, TLS failure, timeout) is
    /// always retried: the provider may not have seen it, and the attempt id makes a second
    /// try of one it did see harmless.
    public static let noAnswer: SendOutcome = .retryable

    /// `Retry-After` in milliseconds: delay-seconds only (providers do not send dates); nil
    /// when absent or unreadable.
    public static func retryAfterMilliseconds(_ header: String?) -> Int64? {
        guard let header, let seconds = Int64(String(header.filter { $0 != " " })), seconds >= 0,
            seconds <= 7 * 86_400
        else { return nil }
        return seconds * 1000
    }
}
