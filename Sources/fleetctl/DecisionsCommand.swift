import ArgumentParser
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka

/// What the delivery worker decided, as a table an on-call engineer can read.
struct DecisionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decisions",
        abstract: "Print the delivery worker's decisions, with the copy of what was delivered.",
        discussion: """
            Reads rin.notify.decisions and rin.notify.deliveries from the beginning and prints one row \
            per decision: when, user, notification, outcome, reason, the P- rule that decided, and the \
            delivered text. Stops when --expect decisions have arrived or --timeout passes.
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Option(help: "Stop once this many decisions have been read.") var expect: Int = 1
    @Option(help: "Give up after this many seconds.") var timeout: Int = 60
    @Option(help: "Only this user's decisions.") var user: String?

    func run() async throws {
        let configuration = try connection.kafkaConfiguration()
        let admin = try KafkaAdmin(configuration: configuration)
        let topics = [Topics.decisions, Topics.deliveries, Topics.deliveryInbox].map(connection.namespace.physical)
        let counts = try await admin.partitionCounts(topics: topics)
        let reader = try KafkaConsumer(configuration: configuration.merging(KafkaConfiguration(properties: [
            "group.id": "fleetctl-decisions-\(UUID().uuidString.prefix(8))",
        ])))
        var offsets: [TopicPartition: Int64] = [:]
        for topic in topics {
            for partition in 0..<Int32(counts[topic] ?? 0) { offsets[TopicPartition(topic, partition)] = KafkaConsumer.beginning }
        }
        try await reader.assign(offsets)

        // Every decision is one record of the decisions topic, so counting those is enough.
        let decisionsTopic = connection.namespace.physical(Topics.decisions)
        let expected = expect
        let messages = try await reader.collect(timeout: .seconds(timeout)) { read in
            read.lazy.filter { $0.topic == decisionsTopic }.count >= expected
        }
        var table = DecisionTable()
        for message in messages {
            guard let value = message.value, let record = try? RecordCodec.decode(value) else { continue }
            table.add(record, topic: connection.namespace.logical(message.topic) ?? message.topic,
                      at: Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0))
        }
        await reader.close()
        print(table.render(user: user))
        if table.decisionCount < expect {
            throw ValidationError("only \(table.decisionCount) of \(expect) expected decisions arrived within \(timeout) s")
        }
    }
}

/// Decisions joined with the deliveries and intents they refer to.
struct DecisionTable: Sendable {
    private var rows: [(Timestamp, Decision)] = []
    private var deliveries: [String: Delivery] = [:]
    private var intents: [String: Intent] = [:]

    var decisionCount: Int { rows.count }

    mutating func add(_ record: FleetRecord, topic: String, at time: Timestamp) {
        switch record {
        case .decision(let decision): rows.append((time, decision))
        case .delivery(let delivery): deliveries[delivery.notificationId] = delivery
        case .intent(let intent): intents[intent.id] = intent
        default: break
        }
    }

    func render(user: String?) -> String {
        let header = ["time", "user", "notification", "outcome", "reason", "rule", "text"]
        var lines: [[String]] = [header]
        for (time, decision) in rows.sorted(by: { ($0.0, $0.1.id) < ($1.0, $1.1.id) })
        where user == nil || decision.userId == user {
            let delivered = decision.notificationId.flatMap { deliveries[$0] }
            // An engine-made notification that was not delivered is named by its kind (`digest`, …).
            let notification = delivered?.notification
                ?? decision.intentId.map { intents[$0]?.notification ?? $0 } ?? decision.kind?.rawValue ?? ""
            lines.append([
                time.rfc3339, decision.userId, notification, decision.outcome.rawValue,
                decision.reason ?? "", decision.rule, delivered?.body ?? "",
            ])
        }
        return TextTable.render(lines)
    }
}
