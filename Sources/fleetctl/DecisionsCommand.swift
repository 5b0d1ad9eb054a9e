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
            Reads rin.notify.decisions, rin.notify.deliveries and the delivery worker's inbox (every \
            generation of it, for the intents' notification types) and prints one row per decision: \
            when, user, notification, outcome, reason, the P- rule that decided, and the delivered \
            text. With --user only that user's partition of each topic is read and only the user's \
            decisions are counted and printed.

            By default it reads every record written so far (each partition to its end as of the \
            call) and stops: no need to know how many decisions there are. With --expect N it \
            waits, reading on as records arrive, until N decisions (the user's, with --user) have \
            been read; if --timeout passes first it prints what arrived and exits 75. Reads \
            only: joins no consumer group and writes nothing.
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Option(help: "Wait until this many decisions (the user's, with --user) have been read (default: read what is there and stop).")
    var expect: Int?
    @Option(help: "Give up after this many seconds (exit 75; with --expect, after printing what arrived).")
    var timeout: Int = 60
    @Option(help: "Only this user's decisions (only the user's partitions are read).")
    var user: String?

    func validate() throws {
        if let expect, expect < 1 { throw ValidationError("--expect is a number of decisions, 1 or more") }
        if timeout < 1 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
        if user?.isEmpty == true { throw ValidationError("--user is empty") }
    }

    func run() async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .seconds(timeout))
        var reader = try await connection.reader(timeout: timeout)
        let registry = try await GenerationRegistry.read(configuration: reader.configuration, namespace: reader.namespace)
        let inboxes = (1...max(1, registry.entry(for: .delivery).generation)).map { Worker.delivery.topics(generation: $0).log }
        let topics = [Topics.decisions, Topics.deliveries] + inboxes
        let counts = try await reader.partitionCounts(topics)
        var next: [TopicPartition: Int64] = [:]
        for topic in topics {
            let count = counts[topic] ?? 0
            let partitions = user.map { [KeyPartitioner.partition(forKey: $0, partitions: count)] } ?? (0..<Int32(count)).map { $0 }
            for partition in partitions { next[TopicPartition(topic, partition)] = KafkaConsumer.beginning }
        }
        var table = DecisionTable(user: user)
        while true {
            let remaining = deadline - clock.now
            guard remaining > .zero else { break }
            reader.timeout = remaining
            do {
                try await reader.stream(next) { message in
                    next[message.topicPartition] = message.offset + 1
                    table.add(message)
                }
            } catch let error as KafkaError where error.isTimeout {
                break
            }
            guard let expect, table.decisionCount < expect else {
                print(table.render())
                return
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        print(table.render())
        let whose = user.map { " for user \($0)" } ?? ""
        if let expect {
            throw CommandFailure(.timedOut, "only \(table.decisionCount) of \(expect) expected decisions\(whose) arrived within \(timeout) s")
        }
        throw CommandFailure(.timedOut, "reading the decisions\(whose) did not finish within \(timeout) s")
    }
}

/// Decisions joined with the deliveries and intents they refer to; with a user, only that
/// user's records are kept (the rest of a partition is read and dropped).
struct DecisionTable: Sendable {
    let user: String?
    private var rows: [(Timestamp, Decision)] = []
    /// Notification type and body of each delivery, by notification id.
    private var deliveries: [String: (notification: String, body: String)] = [:]
    /// Notification type of each intent, by intent id.
    private var intents: [String: String] = [:]

    init(user: String?) { self.user = user }

    var decisionCount: Int { rows.count }

    mutating func add(_ message: KafkaMessage) {
        if let user, message.key != Array(user.utf8) { return }
        guard let value = message.value, let record = try? RecordCodec.decode(value) else { return }
        switch record {
        case .decision(let decision) where message.topic == Topics.decisions:
            guard user == nil || decision.userId == user else { return }
            rows.append((Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0), decision))
        case .delivery(let delivery):
            deliveries[delivery.notificationId] = (delivery.notification, delivery.body)
        case .intent(let intent):
            intents[intent.id] = intent.notification
        default:
            break
        }
    }

    func render() -> String {
        let header = ["time", "user", "notification", "outcome", "reason", "rule", "text"]
        var lines: [[String]] = [header]
        for (time, decision) in rows.sorted(by: { ($0.0, $0.1.id) < ($1.0, $1.1.id) }) {
            let delivered = decision.notificationId.flatMap { deliveries[$0] }
            // An engine-made notification that was not delivered is named by its kind (`digest`, …).
            let notification = delivered?.notification
                ?? decision.intentId.map { intents[$0] ?? $0 } ?? decision.kind?.rawValue ?? ""
            lines.append([
                time.rfc3339, decision.userId, notification, decision.outcome.rawValue,
                decision.reason ?? "", decision.rule, delivered?.body ?? "",
            ])
        }
        return TextTable.render(lines)
    }
}
