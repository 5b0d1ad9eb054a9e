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
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Argument(help: "The JSONL file; '-' or nothing reads standard input.")
    var file: String?

    func run() async throws {
        let text: String
        if let file, file != "-" {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } else {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var records: [ProducerRecord] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard let input = try SimulationInput.parse(line, line: index + 1) else { continue }
            let key = input.key ?? input.value["user_id"]?.stringValue
            records.append(ProducerRecord(
                topic: connection.namespace.physical(input.topic), key: key.map { Array($0.utf8) },
                value: Array(try encoder.encode(JSONValue.object(input.value))),
                timestamp: input.at.millisecondsSinceEpoch))
        }
        let producer = try KafkaProducer(configuration: try connection.kafkaConfiguration())
        let reports = try await producer.send(records)
        await producer.close()
        print("sent \(reports.count) record\(reports.count == 1 ? "" : "s")")
    }
}
