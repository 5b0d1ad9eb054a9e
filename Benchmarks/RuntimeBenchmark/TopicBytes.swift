import FleetModel
import FleetWorkers
import Kafka
import Logging

/// What a topic of the run holds: records and bytes (key, value, header names and values), read
/// back from the broker. Issue #13 measures the bytes a worker writes per input, by topic.
enum TopicBytes {
    static func read(
        topic: String, count: Int, brokers: String, namespace: TopicNamespace, partitions: Int32
    ) async throws -> (records: Int, bytes: Int) {
        guard count > 0 else { return (0, 0) }
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "group.id": namespace.prefix + "bytes", "isolation.level": "read_committed",
        ]), maxBatchSize: 10_000, logger: Logger(label: "runtime-benchmark"))
        var offsets: [TopicPartition: Int64] = [:]
        for partition in 0..<partitions { offsets[TopicPartition(namespace.physical(topic), partition)] = KafkaConsumer.beginning }
        try await consumer.assign(offsets)
        let messages = try await consumer.collect(count: count, timeout: .seconds(30))
        await consumer.close()
        var bytes = 0
        for message in messages {
            bytes += (message.key?.count ?? 0) + (message.value?.count ?? 0)
            for header in message.headers { bytes += header.name.utf8.count + (header.value?.count ?? 0) }
        }
        return (messages.count, bytes)
    }
}
