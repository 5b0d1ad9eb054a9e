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
            decisions are counted and printed. Memory stays bounded whatever the topics hold: \
            past 20 000 rows they are sorted and joined through temporary files (TMPDIR, which \
            must then be writable) and printed as they come.

            By default it reads every record written so far (each partition to its end as of the \
            call) and stops: no need to know how many decisions there are. With --expect N it \
            waits, reading on as records arrive, until N decisions (the user's, with --user) have \
            been read; if --timeout passes first it prints what arrived and exits 75. Reads \
            only: joins no consumer group and writes nothing to the brokers.
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
        let registry = try await GenerationRegistry.read(configuration: reader.configuration, namespace: reader.namespace, logger: reader.logger)
        let inboxes = (1...max(1, registry.entry(for: .delivery).generation)).map { Worker.delivery.topics(generation: $0).log }
        let topics = [Topics.decisions, Topics.deliveries] + inboxes
        let counts = try await reader.partitionCounts(topics)
        var next: [TopicPartition: Int64] = [:]
        for topic in topics {
            let count = counts[topic] ?? 0
            let partitions = user.map { [KeyPartitioner.partition(forKey: $0, partitions: count)] } ?? (0..<Int32(count)).map { $0 }
            for partition in partitions { next[TopicPartition(topic, partition)] = KafkaConsumer.beginning }
        }
        let table = DecisionReport(user: user)
        while true {
            let remaining = deadline - clock.now
            guard remaining > .zero else { break }
            reader.timeout = remaining
            do {
                try await reader.stream(next) { message in
                    next[message.topicPartition] = message.offset + 1
                    try table.add(message)
                }
            } catch let error as KafkaError where error.isTimeout {
                break
            }
            guard let expect, table.decisionCount < expect else {
                try table.render { print($0) }
                return
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        try table.render { print($0) }
        let whose = user.map { " for user \($0)" } ?? ""
        if let expect {
            throw CommandFailure(.timedOut, "only \(table.decisionCount) of \(expect) expected decisions\(whose) arrived within \(timeout) s")
        }
        throw CommandFailure(.timedOut, "reading the decisions\(whose) did not finish within \(timeout) s")
    }
}
