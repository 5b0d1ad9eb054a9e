// Records of the sender (issue 17): the device registry (`rin.devices`), the attempts the
// sender's fold decides (`rin.sender.attempts`), the answers its effect stage writes back into
// the sender's inbox (`rin.sender.inbox`), and one receipt per delivery and channel
// (`rin.notify.receipts`).

/// Where a notification can be sent: an app install (APNs or FCM) or a mailbox.
public enum DevicePlatform: String, Codable, Hashable, Sendable, CaseIterable {
    case ios, android
    /// An email address registered like a device (`token` is the address): the sender's email
    /// channel and fallback need somewhere to send to, and the registry is keyed by user already.
    case email

    /// The provider that delivers to this platform.
    public var provider: SendProvider {
        switch self {
        case .ios: .apns
        case .android: .fcm
        case .email: .email
        }
    }
}

/// The service an attempt goes through.
public enum SendProvider: String, Codable, Hashable, Sendable, CaseIterable { case apns, fcm, email }

/// `device.registered` (`rin.devices`): a user's app install, or email address, that the sender
/// may send to. A later registration of the same `device_id` replaces the earlier one.
public struct DeviceRegistered: RecordPayload {
    public static let typeNames = ["device.registered"]
    public static let maximumTokenLength = 4096

    public var id: String
    public var userId: String
    public var deviceId: String
    public var platform: DevicePlatform
    /// The APNs device token, FCM registration token, or email address.
    public var token: String
    /// The APNs topic (the app's bundle id) or the FCM project id; empty for email.
    public var app: String
    public var locale: String?

    enum CodingKeys: String, CodingKey { case id, userId = "user_id", deviceId = "device_id", platform, token, app, locale }

    public init(id: String, userId: String, deviceId: String, platform: DevicePlatform, token: String, app: String, locale: String? = nil) {
        self.id = id; self.userId = userId; self.deviceId = deviceId; self.platform = platform
        self.token = token; self.app = app; self.locale = locale
    }

    public func validate() throws(RecordError) {
        try requireNonEmpty(deviceId, "device_id")
        try requireNonEmpty(token, "token")
        if token.utf8.count > Self.maximumTokenLength {
            throw RecordError("field 'token' is \(token.utf8.count) bytes, more than \(Self.maximumTokenLength)")
        }
        switch platform {
        case .ios, .android:
            // Without the APNs topic or FCM project the provider cannot be addressed at all.
            try requireNonEmpty(app, "app")
            if token.contains(where: \.isWhitespace) { throw RecordError("field 'token' contains whitespace") }
        case .email:
            guard token.contains("@"), !token.contains(where: { $0.isWhitespace || $0 == "<" || $0 == ">" || $0 == "," }) else {
                throw RecordError("field 'token' is \(RecordError.quote(token)), not an email address")
            }
        }
    }
}

/// `device.unregistered` (`rin.devices`): the user logged out or removed the app; never sent to
/// again unless registered anew.
public struct DeviceUnregistered: RecordPayload {
    public static let typeNames = ["device.unregistered"]
    public var id: String
    public var userId: String
    public var deviceId: String

    enum CodingKeys: String, CodingKey { case id, userId = "user_id", deviceId = "device_id" }

    public init(id: String, userId: String, deviceId: String) { self.id = id; self.userId = userId; self.deviceId = deviceId }

    public func validate() throws(RecordError) { try requireNonEmpty(deviceId, "device_id") }
}

/// `device.invalidated` (`rin.devices`, written by the sender): the provider said the token is
/// dead (APNs 410 `Unregistered`, `BadDeviceToken`, `DeviceTokenNotForTopic`; FCM
/// `UNREGISTERED`, `SENDER_ID_MISMATCH`). The token is never tried again; a registration with a
/// new token brings the device back.
public struct DeviceInvalidated: RecordPayload {
    public static let typeNames = ["device.invalidated"]
    public var id: String
    public var userId: String
    public var deviceId: String
    /// The provider's reason, e.g. `Unregistered`.
    public var reason: String
    /// The attempt whose answer invalidated the device.
    public var attemptId: String
    /// The id of the `device.registered` record whose token is dead: a registration with a new
    /// token that came in meanwhile is not invalidated by it.
    public var registrationId: String

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", deviceId = "device_id", reason, attemptId = "attempt_id", registrationId = "registration_id"
    }

    public init(id: String, userId: String, deviceId: String, reason: String, attemptId: String, registrationId: String) {
        self.id = id; self.userId = userId; self.deviceId = deviceId; self.reason = reason; self.attemptId = attemptId
        self.registrationId = registrationId
    }

    public func validate() throws(RecordError) { try requireNonEmpty(deviceId, "device_id") }
}

/// `send.attempt` (`rin.sender.attempts`): one call the sender's effect stage is to make. It
/// carries everything the call needs, so the effect stage keeps no state of its own.
///
/// `id` is the attempt id, derived from the delivery id (`<delivery>~<target>~<try>`): a re-run
/// after a crash decides the same ids, and the provider sees the same `apns-id` /
/// `Idempotency-Key`, so an attempt the provider already accepted is not sent twice.
public struct SendAttempt: RecordPayload {
    public static let typeNames = ["send.attempt"]
    public var id: String
    public var userId: String
    public var deliveryId: String
    public var notificationId: String
    /// 1 for the first try at this target.
    public var attempt: Int
    public var provider: SendProvider
    /// The device id, or the email address's registration id.
    public var deviceId: String
    /// Device token or email address.
    public var token: String
    public var app: String
    public var notification: String
    public var category: String
    public var title: String
    public var body: String
    public var deepLink: String
    /// The delivery stops being worth sending at this time (`apns-expiration`, FCM `ttl`).
    public var expiresAt: Timestamp
    /// Whether the provider token (APNs JWT, FCM access token) must be renewed before the call:
    /// the previous try was answered `ExpiredProviderToken` / 401.
    public var refreshCredentials: Bool

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", deliveryId = "delivery_id", notificationId = "notification_id", attempt, provider
        case deviceId = "device_id", token, app, notification, category, title, body, deepLink = "deep_link"
        case expiresAt = "expires_at", refreshCredentials = "refresh_credentials"
    }

    public init(
        id: String, userId: String, deliveryId: String, notificationId: String, attempt: Int, provider: SendProvider,
        deviceId: String, token: String, app: String, notification: String, category: String, title: String, body: String,
        deepLink: String, expiresAt: Timestamp, refreshCredentials: Bool = false
    ) {
        self.id = id; self.userId = userId; self.deliveryId = deliveryId; self.notificationId = notificationId
        self.attempt = attempt; self.provider = provider; self.deviceId = deviceId; self.token = token; self.app = app
        self.notification = notification; self.category = category; self.title = title; self.body = body
        self.deepLink = deepLink; self.expiresAt = expiresAt; self.refreshCredentials = refreshCredentials
    }

    public func validate() throws(RecordError) {
        try requireNonEmpty(deliveryId, "delivery_id")
        try requireNonEmpty(deviceId, "device_id")
        try requireNonEmpty(token, "token")
        try requireRange(attempt, 1...100, "attempt")
    }
}

/// What a provider's answer means for the attempt (issue 17, "What each answer means").
public enum SendOutcome: String, Codable, Hashable, Sendable, CaseIterable {
    /// The provider took the message (`provider_id` is its id for it).
    case accepted
    /// The token or address is dead: invalidate the device, never try it again.
    case invalidToken = "invalid_token"
    /// The provider refused this message for good (413, `PayloadTooLarge`, `INVALID_ARGUMENT`).
    case rejected
    /// Try again later (429, 500, 503, `UNAVAILABLE`, `INTERNAL`, connection errors, timeouts).
    case retryable
    /// The provider token was refused as expired (APNs 403 `ExpiredProviderToken`, FCM 401):
    /// renew it and try once more.
    case credentialsExpired = "credentials_expired"
}

/// `send.result` (`rin.sender.inbox`, written by the sender's effect stage): the answer to one
/// attempt. `id` is `result:<attempt id>`, so the copy a crashed effect stage writes again is
/// recognisably the same answer.
public struct SendResult: RecordPayload {
    public static let typeNames = ["send.result"]
    public var id: String
    public var userId: String
    public var attemptId: String
    public var deliveryId: String
    public var deviceId: String
    public var provider: SendProvider
    public var outcome: SendOutcome
    /// HTTP status, absent for connection errors and timeouts.
    public var status: Int?
    /// The provider's reason (`BadDeviceToken`, `UNAVAILABLE`, "connection refused", …).
    public var reason: String?
    /// The provider's id for an accepted message (`apns-id`, FCM message name, email id).
    public var providerId: String?
    /// The provider's `Retry-After`, in milliseconds.
    public var retryAfterMs: Int64?

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", attemptId = "attempt_id", deliveryId = "delivery_id", deviceId = "device_id"
        case provider, outcome, status, reason, providerId = "provider_id", retryAfterMs = "retry_after_ms"
    }

    public init(
        userId: String, attemptId: String, deliveryId: String, deviceId: String, provider: SendProvider, outcome: SendOutcome,
        status: Int? = nil, reason: String? = nil, providerId: String? = nil, retryAfterMs: Int64? = nil
    ) {
        self.id = Self.id(attemptId: attemptId); self.userId = userId; self.attemptId = attemptId
        self.deliveryId = deliveryId; self.deviceId = deviceId; self.provider = provider; self.outcome = outcome
        self.status = status; self.reason = reason; self.providerId = providerId; self.retryAfterMs = retryAfterMs
    }

    public static func id(attemptId: String) -> String { "result:" + attemptId }

    public func validate() throws(RecordError) {
        try requireNonEmpty(attemptId, "attempt_id")
        try requireNonEmpty(deliveryId, "delivery_id")
        if let retryAfterMs { try requireRange(retryAfterMs, 0...(7 * 86_400_000), "retry_after_ms") }
    }
}

/// The final status of a delivery on one channel: the cases users of notification platforms
/// most want told apart.
public enum ReceiptStatus: String, Codable, Hashable, Sendable, CaseIterable {
    /// A provider accepted it (for push: at least one device).
    case sent
    /// Every try failed for good (`reason` is the provider's).
    case failed
    /// Every device's token was found dead.
    case tokenInvalid = "token_invalid"
    /// Push did not get through and the delivery went on by email (its own receipt follows).
    case fellBack = "fell_back"
    /// Never tried: no device, push disabled, unsubscribed (`reason` says which).
    case skipped
    /// Still not through when the delivery's maximum age passed.
    case expired
}

/// `receipt` (`rin.notify.receipts`): one per delivery and channel, written once.
public struct Receipt: RecordPayload {
    public static let typeNames = ["receipt"]
    public var id: String
    public var userId: String
    public var deliveryId: String
    public var notificationId: String
    public var channel: DeliveryChannel
    public var status: ReceiptStatus
    /// Attempts made on this channel, over all its devices.
    public var attempts: Int
    public var provider: SendProvider?
    public var providerId: String?
    public var reason: String?

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", deliveryId = "delivery_id", notificationId = "notification_id", channel, status
        case attempts, provider, providerId = "provider_id", reason
    }

    public init(
        id: String, userId: String, deliveryId: String, notificationId: String, channel: DeliveryChannel, status: ReceiptStatus,
        attempts: Int, provider: SendProvider? = nil, providerId: String? = nil, reason: String? = nil
    ) {
        self.id = id; self.userId = userId; self.deliveryId = deliveryId; self.notificationId = notificationId
        self.channel = channel; self.status = status; self.attempts = attempts; self.provider = provider
        self.providerId = providerId; self.reason = reason
    }

    public func validate() throws(RecordError) { try requireNonEmpty(deliveryId, "delivery_id") }
}

/// The sender's records, one case of `FleetRecord` (so the fleet's other processors need only
/// refuse one case).
public enum SenderRecord: Hashable, Sendable {
    case deviceRegistered(DeviceRegistered)
    case deviceUnregistered(DeviceUnregistered)
    case deviceInvalidated(DeviceInvalidated)
    case attempt(SendAttempt)
    case result(SendResult)
    case receipt(Receipt)

    public var type: String {
        switch self {
        case .deviceRegistered: "device.registered"
        case .deviceUnregistered: "device.unregistered"
        case .deviceInvalidated: "device.invalidated"
        case .attempt: "send.attempt"
        case .result: "send.result"
        case .receipt: "receipt"
        }
    }

    public var payload: any RecordPayload { visitPayload(PayloadExistential()) }

    /// `visitor` applied to the payload as its own type (`FleetRecord.visitPayload`).
    func visitPayload<Visitor: RecordPayloadVisitor>(_ visitor: Visitor) throws(Visitor.Failure) -> Visitor.Result {
        switch self {
        case .deviceRegistered(let p): try visitor.visit(p)
        case .deviceUnregistered(let p): try visitor.visit(p)
        case .deviceInvalidated(let p): try visitor.visit(p)
        case .attempt(let p): try visitor.visit(p)
        case .result(let p): try visitor.visit(p)
        case .receipt(let p): try visitor.visit(p)
        }
    }

    static let decoders: [String: @Sendable (any Decoder) throws -> FleetRecord] = [
        "device.registered": { .sender(.deviceRegistered(try DeviceRegistered(from: $0))) },
        "device.unregistered": { .sender(.deviceUnregistered(try DeviceUnregistered(from: $0))) },
        "device.invalidated": { .sender(.deviceInvalidated(try DeviceInvalidated(from: $0))) },
        "send.attempt": { .sender(.attempt(try SendAttempt(from: $0))) },
        "send.result": { .sender(.result(try SendResult(from: $0))) },
        "receipt": { .sender(.receipt(try Receipt(from: $0))) },
    ]
}
