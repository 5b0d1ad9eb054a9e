import ArgumentParser
import FleetModel
import FleetSimulation
import FleetWorkers
import Foundation
import Kafka

/// Sends records to the fleet's topics, e.g. sample traffic or a slice exported for a replay.
struct ProduceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "produce",
        abstract: "Send a JSONL file of records (the `fleetctl simulate` input format) to the fleet's topics.",
        discussion: """
            Each line is {"at": "<RFC 3339>", "topic": "<topic>", "key": "<user id>", "value": {<record>}}. \
            The record is sent as written, keyed by `key` (or its user_id), with `at` as its timestamp, \
            so the workers see the same times the simulator would. Records are not validated here: \
            invalid ones reach the workers and their dead-letter topics, as in production.

            A `tick` without a key is a clock signal for a whole inbox: it is sent to every partition \
            of its topic, so every partition's timers fire up to its time (what the workers' own ticks \
            do with the wall clock; use it to replay sample traffic with ticks turned off).

            ORDER. Without --in-order every record is sent at once, in file order per partition. \
            The delivery worker then sees records written straight to its inbox (intents, ticks) as \
            soon as they are sent, but a record that reaches it through another worker (a score \
            batch, sync result or access request through the upstream workers; app activity through \
            its own ingest stage) only once that worker has processed it: such records arrive later \
            than lines after them, so the fleet can decide differently from `fleetctl simulate` on \
            the same file (e.g. an access request decided at the end-of-day tick's time, a sign-up's \
            day-one limits not applied to intents that overtook it).

            --in-order keeps the file's order as the fleet sees it: one line at a time, and after a \
            record for a topic another worker reads first (rin.score.batches, \
            rin.contacts.sync-results, rin.security.access-requests, rin.app.activity, rin.reminders) \
            it waits until that worker's consumer group (topic prefix + worker name, as the workers \
            default it) has committed past the record: its outputs are then in the inbox, before the \
            next line is sent. The workers must be running; --timeout bounds each wait (exit 75, \
            naming the record and the group).
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Argument(help: "The JSONL file; '-' or nothing reads standard input.")
    var file: String?

    @Flag(help: "Send one line at a time, waiting for the worker that reads each record first to commit it (see ORDER).")
    var inOrder = false

    @Option(help: "Give up after this many seconds: reaching the brokers, each record's acknowledgement (librdkafka's message.timeout.ms), and with --in-order each wait.")
    var timeout: Int = 30

    func validate() throws {
        if timeout <= 0 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
    }

    /// One line's records: a keyless tick fans out to every partition of its inbox.
    private struct Line {
        var number: Int
        var topic: String
        var records: [ProducerRecord]
    }

    func run() async throws {
        let reader = try await connection.reader(timeout: timeout)
        let text: String
        if let file, file != "-" {
            guard let data = FileManager.default.contents(atPath: file) else { throw CommandFailure(.dataError, "cannot read '\(file)'") }
            text = String(decoding: data, as: UTF8.self)
        } else {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var inputs: [(number: Int, input: SimulationInput)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            do {
                guard let input = try SimulationInput.parse(line, line: index + 1) else { continue }
                inputs.append((index + 1, input))
            } catch {
                throw CommandFailure(.dataError, "\(file ?? "standard input"): \(error.description)")
            }
        }
        // Every topic must exist: a record for a missing one would wait out message.timeout.ms.
        let topics = Array(Set(inputs.map(\.input.topic))).sorted()
        let partitionCounts = try await reader.partitionCounts(topics)

        var lines: [Line] = []
        for (number, input) in inputs {
            let key = input.key ?? input.value["user_id"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            let topic = connection.namespace.physical(input.topic)
            let value = Array(try encoder.encode(JSONValue.object(input.value)))
            if key == nil, input.value["type"]?.stringValue == "tick" {
                let records = (0..<(partitionCounts[input.topic] ?? 0)).map { partition in
                    ProducerRecord(topic: topic, partition: Int32(partition), key: nil, value: value, timestamp: input.at.millisecondsSinceEpoch)
                }
                lines.append(Line(number: number, topic: input.topic, records: records))
                continue
            }
            lines.append(Line(number: number, topic: input.topic, records: [ProducerRecord(
                topic: topic, key: key.map { Array($0.utf8) }, value: value, timestamp: input.at.millisecondsSinceEpoch)]))
        }

        var configuration = reader.configuration
        if configuration["message.timeout.ms"] == nil { configuration["message.timeout.ms"] = String(timeout * 1000) }
        let producer = try KafkaProducer(configuration: configuration, logger: reader.logger)
        var sent = 0
        do {
            if inOrder {
                let waiter = try CommitWaiter(connection: connection, configuration: reader.configuration, timeout: .seconds(timeout))
                for line in lines {
                    let reports = try await producer.send(line.records)
                    sent += reports.count
                    if let worker = Self.firstReader(of: line.topic), let report = reports.first {
                        try await waiter.waitUntilCommitted(
                            worker: worker, partition: TopicPartition(report.topic, report.partition), offset: report.offset, line: line.number)
                    }
                }
                await waiter.close()
            } else {
                sent = try await producer.send(lines.flatMap(\.records)).count
            }
        } catch {
            await producer.close()
            throw error
        }
        await producer.close()
        print("sent \(sent) record\(sent == 1 ? "" : "s")\(inOrder ? ", in order" : "")")
    }

    /// The worker that reads `topic` (logical) before the delivery worker's fold sees its
    /// effect; nil for a topic written straight into a fold's log (the inboxes).
    static func firstReader(of topic: String) -> Worker? {
        for worker in Worker.allCases {
            // rin.app.activity: the delivery worker (before the sender in `allCases`).
            if worker.ingestTopics.contains(topic) { return worker }
            if worker.foldedTopic == topic, !worker.ownsItsLog { return worker }
        }
        return nil
    }
}

/// Reads the workers' committed offsets (OffsetFetch; it never joins their groups).
private struct CommitWaiter {
    let consumers: [Worker: KafkaConsumer]
    let connection: TopicsCommand.Connection
    let timeout: Duration

    init(connection: TopicsCommand.Connection, configuration: KafkaConfiguration, timeout: Duration) throws {
        var consumers: [Worker: KafkaConsumer] = [:]
        for worker in Worker.allCases {
            var reader = configuration
            reader["group.id"] = WorkerSettings.groupId(of: worker, configured: nil, topicPrefix: connection.namespace.prefix)
            reader["enable.auto.commit"] = "false"
            consumers[worker] = try KafkaConsumer(configuration: reader, logger: connection.logger)
        }
        self.consumers = consumers
        self.connection = connection
        self.timeout = timeout
    }

    func waitUntilCommitted(worker: Worker, partition: TopicPartition, offset: Int64, line: Int) async throws {
        guard let consumer = consumers[worker] else { return }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            let committed = try await consumer.committed([partition], timeout: .seconds(5))
            if let next = committed[partition], next > offset { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        let group = WorkerSettings.groupId(of: worker, configured: nil, topicPrefix: connection.namespace.prefix)
        throw CommandFailure(.timedOut, "line \(line): group \(group) has not committed \(partition)@\(offset) within \(timeout.components.seconds) s; is \(worker.rawValue) running?")
    }

    func close() async {
        for consumer in consumers.values { await consumer.close() }
    }
}
