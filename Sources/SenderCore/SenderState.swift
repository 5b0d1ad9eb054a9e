public import FleetModel

/// One user's sender state: their devices, what they allow, the deliveries in progress and the
/// ids of recent finished ones.
///
/// Every collection is read in sorted order by the fold (never in dictionary order, which
/// differs between processes), and encodes with sorted keys, so a replay folds to the same bytes.
public struct SenderState: Codable, Hashable, Sendable {
    /// Registered devices and email addresses, by device id.
    public var devices: [String: DeviceEntry] = [:]
    /// `push_enabled` from the user's settings; nil until a settings record said.
    public var pushEnabled: Bool?
    /// `email_opt_in` from the user's settings; nil until a settings record said. Fallback
    /// needs an explicit opt-in; an email-channel delivery is skipped only on an explicit no.
    public var emailOptIn: Bool?
    /// Tokens a provider declared dead, oldest first (at most `maximumDevices` of them): a
    /// registration of one of them, under any device id, is never tried.
    public var deadTokens: [String] = []
    /// Deliveries not yet finished, by delivery id.
    public var deliveries: [String: DeliveryProgress] = [:]
    /// Finished deliveries' ids with when they finished, kept `deduplicationWindow`.
    public var finished: [String: Timestamp] = [:]

    public init() {}

    enum CodingKeys: String, CodingKey {
        case devices, pushEnabled = "push_enabled", emailOptIn = "email_opt_in", deadTokens = "dead_tokens", deliveries, finished
    }

    mutating func rememberDeadToken(_ token: String, keeping limit: Int) {
        guard !deadTokens.contains(token) else { return }
        deadTokens.append(token)
        if deadTokens.count > limit { deadTokens.removeFirst(deadTokens.count - limit) }
    }
}

/// A registered device or address.
public struct DeviceEntry: Codable, Hashable, Sendable {
    /// The id of the `device.registered` record this entry came from.
    public var registrationId: String
    public var platform: DevicePlatform
    public var token: String
    public var app: String
    public var locale: String?
    /// Set once a provider said the token is dead: the device is never tried again (until a
    /// registration with another token).
    public var invalidated: String?
    /// No attempt to this device before this time: the provider answered 429 for it.
    public var backoffUntil: Timestamp?

    public init(registrationId: String, platform: DevicePlatform, token: String, app: String, locale: String? = nil) {
        self.registrationId = registrationId; self.platform = platform; self.token = token; self.app = app; self.locale = locale
    }

    public var isActive: Bool { invalidated == nil }

    enum CodingKeys: String, CodingKey {
        case registrationId = "registration_id", platform, token, app, locale, invalidated, backoffUntil = "backoff_until"
    }
}

/// A delivery being sent on one channel (push, or email, first or as the fallback).
public struct DeliveryProgress: Codable, Hashable, Sendable {
    public var delivery: Delivery
    public var arrivedAt: Timestamp
    /// Given up as `expired` if not through by then (`arrivedAt + maximumAge`).
    public var expiresAt: Timestamp
    /// The channel being tried now: the delivery's own, or email after a fallback.
    public var channel: DeliveryChannel
    /// One per device (or the one address), in device id order.
    public var targets: [Target]

    public init(delivery: Delivery, arrivedAt: Timestamp, expiresAt: Timestamp, channel: DeliveryChannel, targets: [Target]) {
        self.delivery = delivery; self.arrivedAt = arrivedAt; self.expiresAt = expiresAt; self.channel = channel
        self.targets = targets
    }

    enum CodingKeys: String, CodingKey { case delivery, arrivedAt = "arrived_at", expiresAt = "expires_at", channel, targets }
}

/// One device's (or address's) part in a delivery.
public struct Target: Codable, Hashable, Sendable {
    public var deviceId: String
    public var provider: SendProvider
    /// Attempts made so far (the one in flight included).
    public var tries: Int
    /// Retryable answers that count against `SenderPolicy.maximumTries`: every one but a
    /// provider that was not there (no answer, 503), which is an outage, not this send
    /// failing; those retry until the delivery's maximum age, so a backlog drains afterwards.
    public var countedFailures: Int
    /// Whether the one retry after an expired provider token was used.
    public var credentialsRenewed: Bool
    public var stage: TargetStage

    public init(deviceId: String, provider: SendProvider, stage: TargetStage) {
        self.deviceId = deviceId; self.provider = provider; self.tries = 0; self.countedFailures = 0; self.credentialsRenewed = false; self.stage = stage
    }

    enum CodingKeys: String, CodingKey { case deviceId = "device_id", provider, tries, countedFailures = "counted_failures", credentialsRenewed = "credentials_renewed", stage }
}

/// Where one target stands. The last four are final.
public enum TargetStage: Codable, Hashable, Sendable {
    /// The next attempt is due at this time; `renewCredentials` when it must renew the
    /// provider token first.
    case waiting(until: Timestamp, renewCredentials: Bool)
    /// An attempt was emitted and its answer has not come back; `token` is the one it used
    /// (the device may be registered anew meanwhile: a "dead token" answer is about this one).
    case inFlight(attemptId: String, token: String)
    case sent(providerId: String?)
    case failed(reason: String)
    case invalidated(reason: String)
    case expired(reason: String)

    public var isFinal: Bool {
        switch self {
        case .waiting, .inFlight: false
        case .sent, .failed, .invalidated, .expired: true
        }
    }
}
