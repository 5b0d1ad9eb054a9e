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

    /// The log the worker's stateful stage folds (principle 3).
    public var foldedTopic: String {
        switch self {
        case .score: Topics.scoreBatches
        case .sync: Topics.syncResults
        case .reminder: Topics.reminderInbox
        case .access: Topics.accessRequests
        case .delivery: Topics.deliveryInbox
        }
    }

    /// External topic the worker's ingest stage forwards into its inbox, if it has one.
    public var ingestTopic: String? {
        switch self {
        case .reminder: Topics.reminders
        case .delivery: Topics.appActivity
        default: nil
        }
    }

    public var stateTopic: String { rawValue + ".state" }
    public var historyTopic: String { rawValue + ".history" }
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
        let inputs = [Topics.scoreBatches, Topics.syncResults, Topics.reminders, Topics.accessRequests, Topics.appActivity]
        specs += inputs.map { TopicSpec(name: $0, role: .input) }
        specs += [Topics.deliveryInbox, Topics.reminderInbox].map {
            TopicSpec(name: $0, role: .inbox, configs: ["message.timestamp.type": "LogAppendTime"])
        }
        specs += [Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents].map {
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
        for input in inputs + [Topics.deliveryInbox, Topics.reminderInbox] {
            specs.append(TopicSpec(
                name: Topics.deadLetter(of: input), role: .deadLetter, configs: ["message.timestamp.type": "LogAppendTime"]))
        }
        specs.append(TopicSpec(name: Topics.generations, role: .control, configs: ["cleanup.policy": "compact"]))
        return specs
    }
}
