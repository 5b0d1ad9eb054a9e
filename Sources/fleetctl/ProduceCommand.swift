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
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Argument(help: "The JSONL file; '-' or nothing reads standard input.")
    var file: String?

    @Option(help: "Give up after this many seconds: reaching the brokers, and each record's acknowledgement (librdkafka's message.timeout.ms).")
    var timeout: Int = 30

    func validate() throws {
        if timeout <= 0 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
    }

    func run() async throws {
        _ = try await connection.reader(timeout: timeout)
        let text: String
        if let file, file != "-" {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } else {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var records: [ProducerRecord] = []
        var partitionCounts: [String: Int] = [:]
        var configuration = try connection.kafkaConfiguration()
        if configuration["message.timeout.ms"] == nil { configuration["message.timeout.ms"] = String(timeout * 1000) }
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard let input = try SimulationInput.parse(line, line: index + 1) else { continue }
            let key = input.key ?? input.value["user_id"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            let topic = connection.namespace.physical(input.topic)
            let value = Array(try encoder.encode(JSONValue.object(input.value)))
            if key == nil, input.value["type"]?.stringValue == "tick" {
                if partitionCounts[topic] == nil {
                    partitionCounts.merge(try await KafkaAdmin(configuration: configuration).partitionCounts(topics: [topic])) { _, new in new }
                }
                guard let count = partitionCounts[topic] else {
                    throw CommandFailure(.unavailable, "line \(index + 1): missing topic \(topic) (check --topic-prefix / FLEET_TOPIC_PREFIX, or run `fleetctl topics create`)")
                }
                for partition in 0..<count {
                    records.append(ProducerRecord(
                        topic: topic, partition: Int32(partition), key: nil, value: value, timestamp: input.at.millisecondsSinceEpoch))
                }
                continue
            }
            records.append(ProducerRecord(
                topic: topic, key: key.map { Array($0.utf8) }, value: value, timestamp: input.at.millisecondsSinceEpoch))
        }
        let producer = try KafkaProducer(configuration: configuration)
        let reports = try await producer.send(records)
        await producer.close()
        print("sent \(reports.count) record\(reports.count == 1 ? "" : "s")")
    }
}
