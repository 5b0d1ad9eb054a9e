import FleetModel
import FleetOperations
import FleetTestSupport
import Kafka
import PropertyBased
import Testing

/// `fleetctl decisions`' table through spilled sorts and merge joins (`DecisionReport`) is the
/// table the whole topics held in memory give: the oracle here joins with dictionaries and sorts
/// in memory, as the command did before it streamed.
@Suite struct DecisionReportTests {
    @Test("the spilled table equals the in-memory join and sort, whatever the run length (runs of 1 to 7 rows and in memory)")
    func spilledEqualsInMemory() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...8)) { seed, runLength in
            var random = SplitMix64(seed: UInt64(seed))
            let messages = Self.messages(&random)
            let user: String? = Bool.random(using: &random) ? "u\(Int.random(in: 0..<3, using: &random))" : nil
            do {
                // 8: the largest run length here; more rows than that always spill.
                let report = DecisionReport(user: user, runLength: runLength == 8 ? 10_000 : runLength)
                for message in messages { try report.add(message) }
                var lines: [String] = []
                try report.render { lines.append($0) }
                let expected = Self.inMemory(messages, user: user)
                #expect(lines == expected, "seed \(seed), run length \(runLength)")
                #expect(report.decisionCount == expected.count - 1)
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
        }
    }

    @Test("rows keep text with newlines and separators whole; an undelivered engine notification is named by its kind; an intent never read by its id")
    func edgeCells() throws {
        let messages = [
            Self.message(Topics.deliveries, .delivery(Delivery(
                id: "dl-1", userId: "u0", notificationId: "n1", channel: .push, notification: "score.updated", category: "SCORE",
                title: "t", body: "two\nlines\u{1F}and a separator", deepLink: "rin://x", mergedIntents: ["i1"])), at: 1),
            Self.message(Topics.decisions, .decision(Decision(
                id: "d1", userId: "u0", intentId: "i1", outcome: .delivered, notificationId: "n1", rule: "P-BUD-1")), at: 2),
            Self.message(Topics.decisions, .decision(Decision(
                id: "d2", userId: "u0", kind: .digest, notificationId: "n9", outcome: .skipped, reason: "nothing", rule: "P-BUD-5")), at: 3),
            Self.message(Topics.decisions, .decision(Decision(
                id: "d3", userId: "u0", intentId: "i-gone", outcome: .suppressed, reason: "type_cap", rule: "P-CAP-1")), at: 4),
        ]
        let report = DecisionReport(user: nil, runLength: 1)
        for message in messages { try report.add(message) }
        var lines: [String] = []
        try report.render { lines.append($0) }
        #expect(lines == Self.inMemory(messages, user: nil))
        #expect(lines[1].hasSuffix("two\nlines\u{1F}and a separator"))
        #expect(lines[2].contains("digest"))
        #expect(lines[3].contains("i-gone"))
    }

    // MARK: - Generated topics

    static let notifications = ["score.updated", "contacts.dedup_ready", "security.new_signin"]

    /// Decisions, deliveries and intents of three users with few distinct times (ties in time,
    /// so the id orders them), shared notification ids (merged intents), duplicate copies
    /// (at-least-once), decisions whose intent or delivery was never read, and engine-made
    /// notifications. As in the fleet, an id always names the same content (ids come from log
    /// coordinates; only exact copies repeat one).
    static func messages(_ random: inout SplitMix64) -> [KafkaMessage] {
        var messages: [KafkaMessage] = []
        for index in 0..<Int.random(in: 0...40, using: &random) {
            let user = "u\(Int.random(in: 0..<3, using: &random))"
            let at = Int64.random(in: 0...6, using: &random) * 1_000
            let intentNumber = Int.random(in: 0..<12, using: &random), notificationNumber = Int.random(in: 0..<8, using: &random)
            let intent = "i\(intentNumber)", notificationId = "n\(notificationNumber)"
            let record: (String, FleetRecord)
            switch Int.random(in: 0..<6, using: &random) {
            case 0:
                record = (Topics.deliveryInbox, .intent(Intent(
                    id: intent, userId: user, notification: notifications[intentNumber % notifications.count],
                    category: "SCORE", data: [:], source: SourceCoordinates(topic: "rin.score.batches", partition: 0, offset: Int64(index)))))
            case 1:
                record = (Topics.deliveries, .delivery(Delivery(
                    id: "dl-\(index)", userId: user, notificationId: notificationId, channel: .push,
                    notification: notifications[notificationNumber % notifications.count], category: "SCORE", title: "t",
                    body: "body of \(notificationId)", deepLink: "rin://x", mergedIntents: [intent])))
            case 2:
                record = (Topics.decisions, .decision(Decision(
                    id: "d\(index)", userId: user, kind: .digest, notificationId: notificationId,
                    outcome: .skipped, reason: "nothing_accumulated", rule: "P-BUD-5")))
            default:
                let outcome = DecisionOutcome.allCases.filter { $0 != .skipped }.randomElement(using: &random) ?? .delivered
                record = (Topics.decisions, .decision(Decision(
                    id: "d\(index)", userId: user, intentId: intent, outcome: outcome,
                    reason: Bool.random(using: &random) ? nil : "reason \(Int.random(in: 0..<3, using: &random))",
                    notificationId: Bool.random(using: &random) ? notificationId : nil, rule: "P-BUD-1")))
            }
            let message = Self.message(record.0, record.1, at: at)
            messages.append(message)
            if Int.random(in: 0..<8, using: &random) == 0 { messages.append(message) }
        }
        return messages
    }

    static func message(_ topic: String, _ record: FleetRecord, at: Int64) -> KafkaMessage {
        let user: String
        switch record {
        case .decision(let decision): user = decision.userId
        case .delivery(let delivery): user = delivery.userId
        case .intent(let intent): user = intent.userId
        default: user = ""
        }
        return KafkaMessage(
            topic: topic, partition: 0, offset: 0, key: Array(user.utf8), value: RecordCodec.encode(record),
            timestamp: at, timestampType: .createTime)
    }

    /// The table as `fleetctl decisions` computed it holding everything: dictionaries (the last
    /// copy read wins), rows sorted by time then id.
    static func inMemory(_ messages: [KafkaMessage], user: String?) -> [String] {
        var rows: [(Int64, Decision)] = []
        var deliveries: [String: (notification: String, body: String)] = [:]
        var intents: [String: String] = [:]
        for message in messages {
            if let user, message.key != Array(user.utf8) { continue }
            guard let value = message.value, let record = try? RecordCodec.decode(value) else { continue }
            switch record {
            case .decision(let decision) where message.topic == Topics.decisions:
                if user == nil || decision.userId == user { rows.append((message.timestamp ?? 0, decision)) }
            case .delivery(let delivery): deliveries[delivery.notificationId] = (delivery.notification, delivery.body)
            case .intent(let intent): intents[intent.id] = intent.notification
            default: break
            }
        }
        var table = [["time", "user", "notification", "outcome", "reason", "rule", "text"]]
        for (time, decision) in rows.sorted(by: { ($0.0, $0.1.id) < ($1.0, $1.1.id) }) {
            let delivered = decision.notificationId.flatMap { deliveries[$0] }
            let notification = delivered?.notification
                ?? decision.intentId.map { intents[$0] ?? $0 } ?? decision.kind?.rawValue ?? ""
            table.append([
                Timestamp(millisecondsSinceEpoch: time).rfc3339, decision.userId, notification, decision.outcome.rawValue,
                decision.reason ?? "", decision.rule, delivered?.body ?? "",
            ])
        }
        return TextTable.lines(table)
    }
}
