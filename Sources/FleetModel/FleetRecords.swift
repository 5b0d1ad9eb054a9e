// Records the fleet itself writes: inbox records and the delivery worker's outputs.

/// Where a record came from in the log; output ids and DLQ headers are derived from it.
public struct SourceCoordinates: Codable, Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32
    public var offset: Int64

    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic; self.partition = partition; self.offset = offset
    }

    /// `topic:partition:offset`, the stem of every id derived from this record.
    public var description: String { "\(topic):\(partition):\(offset)" }
}

/// A notification the delivery worker is asked to consider (upstream → `rin.delivery.inbox`).
public struct Intent: RecordPayload {
    public static let typeNames = ["intent"]
    public var id: String
    public var userId: String
    /// The catalog type, e.g. `score.updated`; validated against the profile's catalog (P-CAT-1).
    public var notification: String
    public var category: String
    public var data: JSONObject
    public var expiresAt: Timestamp?
    public var source: SourceCoordinates

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", notification, category, data, expiresAt = "expires_at", source
    }

    public init(
        id: String, userId: String, notification: String, category: String, data: JSONObject,
        expiresAt: Timestamp? = nil, source: SourceCoordinates
    ) {
        self.id = id; self.userId = userId; self.notification = notification; self.category = category
        self.data = data; self.expiresAt = expiresAt; self.source = source
    }

    public func validate() throws(RecordError) {
        try requireNonEmpty(notification, "notification")
        try requireNonEmpty(category, "category")
    }
}

/// A smart-section item (P-SEC-1). Upstream workers send them through the inbox; the delivery
/// worker writes them to `rin.home.sections`.
public struct SectionItem: RecordPayload {
    public static let typeNames = ["section.item"]
    public static let sections: Set<String> = [
        "needs_attention", "score_changed", "upcoming", "recently_added", "enrichment_updates",
        "circle_suggestions", "profile_completion", "welcome_back", "network_health",
    ]
    public var id: String
    public var userId: String
    public var section: String
    public var itemId: String
    public var item: JSONObject
    public var expiresAt: Timestamp?

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", section, itemId = "item_id", item, expiresAt = "expires_at"
    }

    public init(id: String, userId: String, section: String, itemId: String, item: JSONObject, expiresAt: Timestamp? = nil) {
        self.id = id; self.userId = userId; self.section = section; self.itemId = itemId; self.item = item
        self.expiresAt = expiresAt
    }

    public func validate() throws(RecordError) {
        guard Self.sections.contains(section) else {
            throw RecordError("field 'section' is \(RecordError.quote(section)), not one of \(Self.sections.sorted().joined(separator: ", "))")
        }
        try requireNonEmpty(itemId, "item_id")
    }
}

/// A retention event of §11 (`event` is its name, e.g. `retention.quiet_mode_entered`).
public struct RetentionEvent: RecordPayload {
    public static let typeNames = ["retention.event"]
    public var id: String
    public var userId: String
    public var event: String
    public var properties: JSONObject

    enum CodingKeys: String, CodingKey { case id, userId = "user_id", event, properties }

    public init(id: String, userId: String, event: String, properties: JSONObject = [:]) {
        self.id = id; self.userId = userId; self.event = event; self.properties = properties
    }

    public func validate() throws(RecordError) { try requireNonEmpty(event, "event") }
}

/// Appended by an inbox's owner while the partition is idle, so timers fire (DESIGN.md "Time").
/// Not about any user: `user_id` is empty.
public struct Tick: RecordPayload {
    public static let typeNames = ["tick"]
    public var id: String
    public var userId: String

    enum CodingKeys: String, CodingKey { case id, userId = "user_id" }

    public init(id: String) { self.id = id; self.userId = "" }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        userId = try c.decodeIfPresent(String.self, forKey: .userId) ?? ""
    }
}

public enum DeliveryChannel: String, Codable, Hashable, Sendable, CaseIterable { case push, email }

/// A notification to send (`rin.notify.deliveries`), read by the push and email senders.
public struct Delivery: RecordPayload {
    public static let typeNames = ["delivery"]
    public var id: String
    public var userId: String
    public var notificationId: String
    public var channel: DeliveryChannel
    public var notification: String
    public var category: String
    public var title: String
    public var body: String
    public var deepLink: String
    public var mergedIntents: [String]

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", notificationId = "notification_id", channel, notification, category, title, body
        case deepLink = "deep_link", mergedIntents = "merged_intents"
    }

    public init(
        id: String, userId: String, notificationId: String, channel: DeliveryChannel, notification: String,
        category: String, title: String, body: String, deepLink: String, mergedIntents: [String]
    ) {
        self.id = id; self.userId = userId; self.notificationId = notificationId; self.channel = channel
        self.notification = notification; self.category = category; self.title = title; self.body = body
        self.deepLink = deepLink; self.mergedIntents = mergedIntents
    }
}

public enum DecisionOutcome: String, Codable, Hashable, Sendable, CaseIterable {
    case delivered, merged, deferred, suppressed, digested

    /// Every outcome but `deferred` is final: an intent has exactly one final decision.
    public var isFinal: Bool { self != .deferred }
}

/// Why an intent was (or was not) delivered (`rin.notify.decisions`): one final decision per
/// intent, naming the P- rule that decided it.
public struct Decision: RecordPayload {
    public static let typeNames = ["decision"]
    public var id: String
    public var userId: String
    public var intentId: String
    public var outcome: DecisionOutcome
    public var reason: String?
    public var notificationId: String?
    public var until: Timestamp?
    public var rule: String

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", intentId = "intent_id", outcome, reason, notificationId = "notification_id"
        case until, rule
    }

    public init(
        id: String, userId: String, intentId: String, outcome: DecisionOutcome, reason: String? = nil,
        notificationId: String? = nil, until: Timestamp? = nil, rule: String
    ) {
        self.id = id; self.userId = userId; self.intentId = intentId; self.outcome = outcome; self.reason = reason
        self.notificationId = notificationId; self.until = until; self.rule = rule
    }
}
