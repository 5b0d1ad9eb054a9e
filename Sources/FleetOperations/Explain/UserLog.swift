import FleetModel
import FleetWorkers
public import Kafka

/// The raw material of one user's explanation: the records of the user's partition of the
/// delivery worker's inbox, its history and its four output topics, as read from Kafka.
///
/// Everything about a user lives on one partition number (DESIGN.md principle 2), so nothing
/// else has to be read. The inbox is kept whole (ticks and other users' records move log time
/// and fire this user's timers); history and outputs only for the user. Messages carry logical
/// topic names.
public struct UserLog: Sendable {
    public var userId: String
    /// The user's partition of `rin.delivery.inbox`.
    public var partition: Int32
    /// The inbox's partition count.
    public var partitionCount: Int
    public var inbox: [KafkaMessage]
    /// `delivery-worker.history` change records of this user.
    public var history: [KafkaMessage]
    /// Decisions, deliveries, section items and retention events of this user.
    public var outputs: [KafkaMessage]

    public init(
        userId: String, partition: Int32, partitionCount: Int, inbox: [KafkaMessage], history: [KafkaMessage],
        outputs: [KafkaMessage]
    ) {
        self.userId = userId
        self.partition = partition
        self.partitionCount = partitionCount
        self.inbox = inbox
        self.history = history.filter { $0.keyText == userId }
        self.outputs = outputs.filter { $0.keyText == userId }
    }

    /// The topics whose user partition an explanation reads.
    public static let outputTopics = [Topics.decisions, Topics.deliveries, Topics.sections, Topics.retentionEvents]
    public static var topics: [String] { [Topics.deliveryInbox, Worker.delivery.historyTopic] + outputTopics }

    /// Reads the user's partition of every topic in `topics`, each to its end as of the call.
    ///
    /// The partition is computed per topic with the producers' partitioner, so a topic whose
    /// partition count drifted (which `fleetctl topics check` reports) is still read where this
    /// user's records went.
    public static func read(user: String, from reader: FleetTopicReader) async throws -> UserLog {
        let counts = try await reader.partitionCounts(topics)
        var byPartition: [Int32: [String]] = [:]
        for topic in topics {
            let count = counts[topic] ?? 1
            byPartition[KeyPartitioner.partition(forKey: user, partitions: count), default: []].append(topic)
        }
        var messages: [KafkaMessage] = []
        for (partition, group) in byPartition.sorted(by: { $0.key < $1.key }) {
            messages += try await reader.read(group, partitions: [partition])
        }
        let inboxCount = counts[Topics.deliveryInbox] ?? 1
        return UserLog(
            userId: user, partition: KeyPartitioner.partition(forKey: user, partitions: inboxCount),
            partitionCount: inboxCount,
            inbox: messages.filter { $0.topic == Topics.deliveryInbox },
            history: messages.filter { $0.topic == Worker.delivery.historyTopic },
            outputs: messages.filter { outputTopics.contains($0.topic) })
    }
}

extension KafkaMessage {
    var keyText: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
