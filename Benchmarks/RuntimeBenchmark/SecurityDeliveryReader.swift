import FleetModel
import FleetWorkers
import Kafka
import Synchronization
import Logging

/// Reads `rin.notify.deliveries` as the sender does — `read_committed`, so under exactly-once a
/// delivery counts once its transaction committed — and notes when each SECURITY delivery
/// became readable, by the intent ids it names (`merged_intents`).
///
/// It hands the consumer one message at a time: `rd_kafka_consume_batch_queue` waits up to its
/// timeout for a batch to fill, which would add up to 100 ms to a receipt. Fetches wait at most
/// `fetch.wait.max.ms` = 10 ms on an empty topic, so a receipt is at most that late.
final class SecurityDeliveryReader: Sendable {
    /// A SECURITY delivery as read.
    struct Receipt: Sendable {
        var received: ContinuousClock.Instant
        /// The delivery record's timestamp: the worker's log time at the intent, i.e. when the
        /// intent was appended to the inbox (a `LogAppendTime` topic).
        var timestamp: Int64?
    }

    struct Result {
        /// The first receipt of each intent's delivery.
        var receipts: [String: Receipt] = [:]
        /// Further copies of a delivery already received (at-least-once may write a unit twice).
        var duplicates = 0
        /// SECURITY deliveries naming no expected intent, by delivery id.
        var unexpected: [String] = []
        /// Records of the topic that did not decode as deliveries.
        var undecodable = 0
    }

    private let consumer: KafkaConsumer
    private let expected: Set<String>
    private let ignored: Set<String>
    private let state = Mutex(Result())

    /// Assigns every partition of the namespace's deliveries topic from the beginning.
    /// - Parameters:
    ///   - expected: the intents whose deliveries to time.
    ///   - ignored: other security intents of the run (the warm-up's).
    init(expected: Set<String>, ignoring ignored: Set<String>, brokers: String, namespace: TopicNamespace, partitions: Int32) async throws {
        self.expected = expected
        self.ignored = ignored
        consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "group.id": namespace.prefix + "latency-reader",
            "isolation.level": "read_committed", "fetch.wait.max.ms": "10",
        ]), maxBatchSize: 1, logger: Logger(label: "runtime-benchmark"))
        let topic = namespace.physical(Topics.deliveries)
        try await consumer.assign(Dictionary(uniqueKeysWithValues: (0..<partitions).map {
            (TopicPartition(topic, $0), KafkaConsumer.beginning)
        }))
    }

    /// Intents whose delivery has been read so far.
    var received: Int { state.withLock { $0.receipts.count } }

    /// What was read so far.
    var result: Result { state.withLock { $0 } }

    /// Reads until every expected intent's delivery arrived, or the task is cancelled; start it
    /// before the first intent is produced (the consumer is read only while this runs).
    func read() async throws {
        for try await batch in consumer.batches {
            let received = ContinuousClock.now
            let done = state.withLock { result in
                for message in batch { take(message, received: received, into: &result) }
                return result.receipts.count == expected.count
            }
            if done { return }
        }
    }

    private func take(_ message: KafkaMessage, received: ContinuousClock.Instant, into result: inout Result) {
        guard let value = message.value, case .delivery(let delivery)? = try? RecordCodec.decode(value) else {
            result.undecodable += 1
            return
        }
        guard delivery.category.uppercased() == "SECURITY" else { return }
        let named = delivery.mergedIntents.filter(expected.contains)
        if named.isEmpty && delivery.mergedIntents.allSatisfy({ !ignored.contains($0) }) { result.unexpected.append(delivery.id) }
        for intent in named {
            if result.receipts[intent] == nil {
                result.receipts[intent] = Receipt(received: received, timestamp: message.timestamp)
            } else {
                result.duplicates += 1
            }
        }
    }

    func close() async {
        await consumer.close()
    }
}
