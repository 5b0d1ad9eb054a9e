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

    /// `@inlinable`: the delivery engine builds one of these per output, and an opaque call
    /// built the record in a temporary and copied it out (no cross-module optimisation).
    @inlinable
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

    /// `@inlinable`: the delivery engine builds one of these per output, and an opaque call
    /// built the record in a temporary and copied it out (no cross-module optimisation).
    @inlinable
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

    /// `@inlinable`: the delivery engine builds one of these per output, and an opaque call
    /// built the record in a temporary and copied it out (no cross-module optimisation).
    @inlinable
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
    /// A notification the engine made itself that had nothing (left) to say: the user opened
    /// the app before it was due, or nothing accumulated to summarise. Never an intent's.
    case skipped

    /// Every outcome but `deferred` is final: an intent, and a notification the engine made
    /// itself, each have exactly one final decision.
    public var isFinal: Bool { self != .deferred }

    /// The outcomes an intent's decision may have.
    public static let forIntents: Set<DecisionOutcome> = [.delivered, .merged, .deferred, .suppressed, .digested]
    /// The outcomes a decision on a notification the engine made itself may have.
    public static let forEngineNotifications: Set<DecisionOutcome> = [.delivered, .deferred, .suppressed, .skipped]
}

/// A notification the delivery engine makes itself, with no intent behind it (the `kind` of its
/// decision records).
public enum EngineNotificationKind: String, Codable, Hashable, Sendable, CaseIterable {
    /// P-BUD-5: what a busy day held back, summarised the next morning.
    case digest
    /// P-LAP-2: the 14-day summary of what accumulated since the last open.
    case lapsedSummary = "lapsed_summary"
    /// P-LAP-3 `top_pending` quiet weeks: the most important held-back notification instead of the summary.
    case topPending = "top_pending"
    /// P-LAP-4: the 30-day (or 30 days without an intentional action) value reminder.
    case valueReminder = "value_reminder"
    /// P-LAP-5: the one email to a dormant user who opted in.
    case dormantEmail = "dormant_email"
}

/// Why something was (or was not) delivered (`rin.notify.decisions`), naming the P- rule that
/// decided it. Two shapes share the record type:
///
/// - about an intent (`intent_id`): one final decision per intent;
/// - about a notification the engine made itself (`kind`, no `intent_id`): the digest, the lapse
///   tiers and the dormant email have no intent, so without these a rule that stopped one
///   would leave no trace. One final decision per such notification (`notification_id`),
///   deferrals before it.
///
/// The intent shape's bytes are those of the first format (`kind` is left out when absent), so
/// consumers written for it read the same records; they tell the shapes apart by `intent_id`.
public struct Decision: RecordPayload {
    public static let typeNames = ["decision"]
    public var id: String
    public var userId: String
    /// The intent decided; nil when the decision is about a notification the engine made (`kind`).
    public var intentId: String?
    /// What the engine made; nil when the decision is about an intent.
    public var kind: EngineNotificationKind?
    public var outcome: DecisionOutcome
    public var reason: String?
    public var notificationId: String?
    public var until: Timestamp?
    public var rule: String

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", intentId = "intent_id", kind, outcome, reason, notificationId = "notification_id"
        case until, rule
    }

    /// A decision on an intent.
    /// `@inlinable` like the other output records' initialisers (see `Delivery.init`).
    @inlinable
    public init(
        id: String, userId: String, intentId: String, outcome: DecisionOutcome, reason: String? = nil,
        notificationId: String? = nil, until: Timestamp? = nil, rule: String
    ) {
        self.id = id; self.userId = userId; self.intentId = intentId; self.kind = nil; self.outcome = outcome
        self.reason = reason; self.notificationId = notificationId; self.until = until; self.rule = rule
    }

    /// A decision on the notification `notificationId` the engine made itself.
    /// `@inlinable` like the other output records' initialisers (see `Delivery.init`).
    @inlinable
    public init(
        id: String, userId: String, kind: EngineNotificationKind, notificationId: String, outcome: DecisionOutcome,
        reason: String, until: Timestamp? = nil, rule: String
    ) {
        self.id = id; self.userId = userId; self.intentId = nil; self.kind = kind; self.outcome = outcome
        self.reason = reason; self.notificationId = notificationId; self.until = until; self.rule = rule
    }

    /// Whether this is about a notification the engine made itself rather than an intent.
    public var isAboutEngineNotification: Bool { kind != nil }

    public func validate() throws(RecordError) {
        switch (intentId, kind) {
        case (let intent?, nil):
            try requireNonEmpty(intent, "intent_id")
            guard DecisionOutcome.forIntents.contains(outcome) else {
                throw RecordError("field 'outcome' is '\(outcome.rawValue)', which an intent's decision cannot have")
            }
        case (nil, _?):
            guard let notificationId, !notificationId.isEmpty else {
                throw RecordError("missing required field 'notification_id' (a decision with a 'kind' is about that notification)")
            }
            guard DecisionOutcome.forEngineNotifications.contains(outcome) else {
                throw RecordError("field 'outcome' is '\(outcome.rawValue)', which a decision on an engine-made notification cannot have")
            }
        case (_?, _?):
            throw RecordError("a decision has either 'intent_id' or 'kind', not both")
        case (nil, nil):
            throw RecordError("missing required field 'intent_id' (or 'kind' for an engine-made notification)")
        }
    }
}
