/// The fleet's topic names and what each topic may carry (DESIGN.md "Topics and records").
public enum Topics {
    public static let scoreBatches = "rin.score.batches"
    public static let syncResults = "rin.contacts.sync-results"
    public static let reminders = "rin.reminders"
    public static let accessRequests = "rin.security.access-requests"
    public static let appActivity = "rin.app.activity"
    public static let deliveryInbox = "rin.delivery.inbox"
    public static let reminderInbox = "rin.reminder.inbox"
    public static let deliveries = "rin.notify.deliveries"
    public static let decisions = "rin.notify.decisions"
    public static let sections = "rin.home.sections"
    public static let retentionEvents = "rin.retention.events"
    /// The device registry, keyed by user (`device.registered` / `unregistered` / `invalidated`).
    public static let devices = "rin.devices"
    /// The sender's log: deliveries, device records and settings forwarded from their topics,
    /// and the effect stage's `send.result` answers.
    public static let senderInbox = "rin.sender.inbox"
    /// The attempts the sender's fold decided, for its effect stage.
    public static let sendAttempts = "rin.sender.attempts"
    /// One final status per delivery and channel.
    public static let receipts = "rin.notify.receipts"

    /// The dead-letter topic of `topic`.
    public static func deadLetter(of topic: String) -> String { topic + ".dlq" }

    /// Record types allowed per topic; decoding a record on the wrong topic is an error.
    public static let allowedTypes: [String: Set<String>] = {
        let activityTypes: Set<String> = [
            "user.signed_up", "app.opened", "notification.opened", "notification.dismissed",
            "user.settings_changed", "permission.changed", "user.action", "score.viewed",
        ]
        let reminderTypes: Set<String> = ["reminder.upserted", "reminder.cancelled"]
        let deviceTypes: Set<String> = ["device.registered", "device.unregistered", "device.invalidated"]
        return [
            scoreBatches: ["score.computed"],
            syncResults: ["contacts.sync_completed"],
            reminders: reminderTypes,
            accessRequests: ["access.requested", "security.new_signin", "security.suspicious_activity"],
            appActivity: activityTypes,
            deliveryInbox: activityTypes.union(["intent", "section.item", "retention.event", "tick"]),
            reminderInbox: reminderTypes.union(["tick"]),
            deliveries: ["delivery"],
            decisions: ["decision"],
            sections: ["section.item"],
            retentionEvents: ["retention.event"],
            devices: deviceTypes,
            senderInbox: deviceTypes.union(["delivery", "user.settings_changed", "send.result", "tick"]),
            sendAttempts: ["send.attempt"],
            receipts: ["receipt"],
        ]
    }()
}

/// One of the fleet's worker executables and the topics it owns.
public enum Worker: String, CaseIterable, Sendable, Codable {
    case score = "score-worker"
    case sync = "sync-worker"
    case reminder = "reminder-worker"
    case access = "access-worker"
    case delivery = "delivery-worker"
    /// Sends the deliveries (issue 17): folds `rin.sender.inbox`, and its effect stage (in the
    /// same process) makes the provider calls the fold decided.
    case sender = "sender-worker"

    /// The log the worker's stateful stage folds (principle 3).
    public var foldedTopic: String {
        switch self {
        case .score: Topics.scoreBatches
        case .sync: Topics.syncResults
        case .reminder: Topics.reminderInbox
        case .access: Topics.accessRequests
        case .delivery: Topics.deliveryInbox
        case .sender: Topics.senderInbox
        }
    }

    /// External topics the worker's ingest stage forwards into its inbox, in this order; empty
    /// for the workers that fold an external topic directly.
    public var ingestSources: [IngestSource] {
        switch self {
        case .reminder: [IngestSource(topic: Topics.reminders)]
        case .delivery: [IngestSource(topic: Topics.appActivity)]
        case .sender:
            [
                IngestSource(topic: Topics.deliveries), IngestSource(topic: Topics.devices),
                // Push and email consent (`push_enabled`, `email_opt_in`) only.
                IngestSource(topic: Topics.appActivity, only: ["user.settings_changed"]),
            ]
        case .score, .sync, .access: []
        }
    }

    /// The fleet topics the worker's fold writes its outputs to (besides its own state,
    /// history and dead letters), as logical names before generation routing.
    public var outputTopics: [String] {
        switch self {
        case .score, .sync, .reminder, .access: [Topics.deliveryInbox]
        case .delivery: [Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents]
        case .sender: [Topics.sendAttempts, Topics.receipts]
        }
    }

    /// The logical names of `ingestSources`.
    public var ingestTopics: [String] { ingestSources.map(\.topic) }

    public var stateTopic: String { rawValue + ".state" }
    public var historyTopic: String { rawValue + ".history" }
}

/// An external topic a worker's ingest stage forwards into the worker's own log.
public struct IngestSource: Hashable, Sendable {
    public var topic: String
    /// The record types forwarded; nil forwards every record and dead-letters what does not
    /// decode. A source read for a few types only is another worker's input (the sender reads
    /// settings changes off `rin.app.activity`, the delivery worker's): its other records, and
    /// records that do not decode, are that worker's to fold or dead-letter, so they are
    /// skipped here rather than dead-lettered a second time.
    public var only: Set<String>?

    public init(topic: String, only: Set<String>? = nil) { self.topic = topic; self.only = only }

    /// Whether a record of `type` read from this source is forwarded.
    public func forwards(_ type: String) -> Bool { only?.contains(type) ?? true }
}

/// How a topic is created (`fleetctl topics create`).
public struct TopicSpec: Hashable, Sendable {
    public enum Role: String, Sendable { case input, inbox, output, state, history, deadLetter, control }
    public var name: String
    public var role: Role
    /// Topics that must have the same partition count as this one (principle 2).
    public var configs: [String: String]

    public init(name: String, role: Role, configs: [String: String] = [:]) {
        self.name = name; self.role = role; self.configs = configs
    }

    /// Every topic of the fleet with its configs. All share one partition count, which is what
    /// keeps every worker's input, state and history co-partitioned.
    public static var all: [TopicSpec] {
        var specs: [TopicSpec] = []
        let inputs = [Topics.scoreBatches, Topics.syncResults, Topics.reminders, Topics.accessRequests, Topics.appActivity, Topics.devices]
        let inboxes = [Topics.deliveryInbox, Topics.reminderInbox, Topics.senderInbox]
        specs += inputs.map { TopicSpec(name: $0, role: .input) }
        specs += inboxes.map {
            TopicSpec(name: $0, role: .inbox, configs: ["message.timestamp.type": "LogAppendTime"])
        }
        specs += [Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents, Topics.sendAttempts, Topics.receipts].map {
            TopicSpec(name: $0, role: .output)
        }
        for worker in Worker.allCases {
            specs.append(TopicSpec(name: worker.stateTopic, role: .state, configs: ["cleanup.policy": "compact"]))
            specs.append(TopicSpec(
                name: worker.historyTopic, role: .history,
                configs: ["cleanup.policy": "delete", "retention.ms": String(14 * 86_400_000)]))
        }
        // LogAppendTime: a dead letter's own timestamp is when it was dead-lettered (what `dlq
        // list --since` filters by); the failed record's timestamp travels in its
        // `source-timestamp` header.
        // The sender's ingest dead-letters bad deliveries; its effect stage, bad attempts.
        for input in inputs + inboxes + [Topics.deliveries, Topics.sendAttempts] {
            specs.append(TopicSpec(
                name: Topics.deadLetter(of: input), role: .deadLetter, configs: ["message.timestamp.type": "LogAppendTime"]))
        }
        specs.append(TopicSpec(name: Topics.generations, role: .control, configs: ["cleanup.policy": "compact"]))
        return specs
    }
}
