import DeliveryWorkload
import FleetModel
import FleetWorkers
import Kafka
import Logging

/// A fingerprint of what the fold wrote, to check that an optimisation left the bytes alone:
/// per topic, FNV-1a 64 over every record's partition, position in it, key, value, headers and
/// timestamp, in (partition, offset) order. Positions, not offsets: under exactly-once,
/// transaction markers take offsets too. Two runs over the same inbox agree when the
/// worker's outputs, ids and history are byte-identical. (`<worker>.state` is left out: which
/// users a commit unit holds depends on timing; so are history timestamps: history records
/// carry none, so the producer stamps them with the wall clock.)
enum OutputDigest {
    static let topics = [
        Topics.decisions, Topics.deliveries, Topics.sections, Topics.retentionEvents, Worker.delivery.historyTopic,
    ]

    /// Reads `expected[topic]` records of each topic and returns one line per topic.
    static func lines(
        expected: [String: Int], brokers: String, namespace: TopicNamespace, partitions: Int32
    ) async throws -> [String] {
        var lines: [String] = []
        for topic in topics {
            let count = expected[topic] ?? 0
            let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
                "bootstrap.servers": brokers, "group.id": namespace.prefix + "digest", "isolation.level": "read_committed",
            ]), maxBatchSize: 10_000, logger: Logger(label: "runtime-benchmark"))
            var offsets: [TopicPartition: Int64] = [:]
            for partition in 0..<partitions { offsets[TopicPartition(namespace.physical(topic), partition)] = KafkaConsumer.beginning }
            try await consumer.assign(offsets)
            let messages = count == 0 ? [] : try await consumer.collect(count: count, timeout: .seconds(60))
            await consumer.close()
            var hash = FNV1a64()
            var position: (partition: Int32, index: Int) = (-1, 0)
            for message in messages.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
                position = message.partition == position.partition ? (position.partition, position.index + 1) : (message.partition, 0)
                let timestamp = topic == Worker.delivery.historyTopic ? nil : message.timestamp
                hash.add("\(message.partition):\(position.index):\(timestamp ?? -1)")
                hash.add(message.key ?? [])
                hash.add(message.value ?? [])
                for header in message.headers {
                    hash.add(header.name)
                    hash.add(header.value ?? [])
                }
            }
            lines.append("DIGEST \(topic) records=\(messages.count) expected=\(count) fnv=\(String(hash.value, radix: 16))")
        }
        return lines
    }
}
