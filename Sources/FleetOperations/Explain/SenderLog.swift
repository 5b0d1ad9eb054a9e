public import FleetModel
import Kafka

/// Reads what the sender did with some of a user's deliveries from the user's partition of
/// `rin.notify.receipts`, `rin.sender.attempts` and `rin.sender.inbox` (its `send.result`
/// records), streaming, keeping only the records of those deliveries: memory grows with them,
/// not with the partitions.
///
/// A fleet without the sender has none of these topics: the ones missing are named in the trail
/// and nothing fails.
public enum SenderLog {
    /// With `since`, each topic is read from `since` less `UserLog.lookback`, as the delivery
    /// worker's outputs are (offsets-for-times, with the scanning fallback of `TimeSeek`): an
    /// attempt or receipt comes after the delivery it is about.
    public static func read(
        user: String, deliveryIds: Set<String>, from reader: FleetTopicReader, since: Timestamp? = nil
    ) async throws -> SendTrail {
        let counts = try await reader.physicalPartitionCounts(SendTrail.topics.map(reader.namespace.physical))
        var starts: [TopicPartition: Int64] = [:]
        var missing: [String] = []
        for topic in SendTrail.topics {
            guard let count = counts[reader.namespace.physical(topic)], count > 0 else {
                missing.append(topic)
                continue
            }
            starts[TopicPartition(topic, KeyPartitioner.partition(forKey: user, partitions: count))] = KafkaConsumer.beginning
        }
        guard !deliveryIds.isEmpty, !starts.isEmpty else { return SendTrail(missingTopics: missing) }
        if let since {
            for (partition, offset) in try await reader.offsets(atOrAfter: since - UserLog.lookback, in: Array(starts.keys)) {
                starts[partition] = offset
            }
        }

        var collector = Collector(deliveryIds: deliveryIds)
        let userKey = Array(user.utf8)
        try await reader.stream(starts) { message in
            guard message.key == userKey, let value = message.value,
                case .sender(let record)? = try? RecordCodec.decode(value, topic: message.topic)
            else { return }
            collector.add(record, at: message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)))
        }
        return SendTrail(missingTopics: missing, deliveries: collector.deliveries)
    }

    /// Keeps the first copy of each attempt, answer and receipt (a re-run after a crash writes the
    /// same ids again) of the deliveries asked for.
    struct Collector {
        let deliveryIds: Set<String>
        private var attempts: [String: [AttemptTrace]] = [:]
        private var attemptIds = Set<String>()
        private var results: [String: (result: SendResult, at: Timestamp?)] = [:]
        private var receipts: [String: [ReceiptTrace]] = [:]

        init(deliveryIds: Set<String>) { self.deliveryIds = deliveryIds }

        mutating func add(_ record: SenderRecord, at time: Timestamp?) {
            switch record {
            case .attempt(let attempt) where deliveryIds.contains(attempt.deliveryId):
                guard attemptIds.insert(attempt.id).inserted else { return }
                attempts[attempt.deliveryId, default: []].append(AttemptTrace(attempt: attempt, at: time))
            case .result(let result) where deliveryIds.contains(result.deliveryId):
                if results[result.attemptId] == nil { results[result.attemptId] = (result, time) }
            case .receipt(let receipt) where deliveryIds.contains(receipt.deliveryId):
                let channels = receipts[receipt.deliveryId, default: []]
                guard !channels.contains(where: { $0.receipt.channel == receipt.channel }) else { return }
                receipts[receipt.deliveryId, default: []].append(ReceiptTrace(receipt: receipt, at: time))
            default:
                break
            }
        }

        /// Attempts with their answers, and receipts, by delivery id.
        var deliveries: [String: DeliverySends] {
            var all: [String: DeliverySends] = [:]
            for (deliveryId, traces) in attempts {
                all[deliveryId, default: DeliverySends()].attempts = traces.map { trace in
                    var trace = trace
                    if let answer = results[trace.attempt.id] { trace.result = answer.result; trace.answeredAt = answer.at }
                    return trace
                }
            }
            for (deliveryId, traces) in receipts { all[deliveryId, default: DeliverySends()].receipts = traces }
            return all
        }
    }
}
