import FleetModel
import FleetWorkers
public import Kafka

/// The raw material of one user's explanation: the records of the user's partition of the
/// delivery worker's log, its history and its four output topics, as read from Kafka.
///
/// Everything about a user lives on one partition number (DESIGN.md principle 2), so nothing
/// else has to be read. The log is kept whole (ticks and other users' records move log time
/// and fire this user's timers); history and outputs only for the user. Messages carry logical
/// topic names.
///
/// After a partition migration the delivery worker's log exists in several generations
/// (`rin.delivery.inbox`, `rin.delivery.inbox.g2`, …; see `TopicGenerations`), each with its own
/// partition count, so the user's partition differs per generation: every generation is read,
/// each on the user's partition of it, and so is every generation's history.
public struct UserLog: Sendable {
    /// One generation of the delivery worker's log, and the user's partition of it.
    public struct LogGeneration: Hashable, Sendable {
        public var generation: Int
        /// The logical name of the generation's log (`rin.delivery.inbox.g<generation>`).
        public var topic: String
        public var partition: Int32
        public var partitionCount: Int

        public init(generation: Int, topic: String, partition: Int32, partitionCount: Int) {
            self.generation = generation; self.topic = topic; self.partition = partition; self.partitionCount = partitionCount
        }
    }

    public var userId: String
    /// The user's partition of the newest generation read of the log.
    public var partition: Int32
    /// That generation's partition count.
    public var partitionCount: Int
    /// Every generation of the log read, oldest first.
    public var generations: [LogGeneration]
    /// The user's partition of each generation's log, whole.
    public var inbox: [KafkaMessage]
    /// History change records of this user, from every generation's history.
    public var history: [KafkaMessage]
    /// Decisions, deliveries, section items and retention events of this user.
    public var outputs: [KafkaMessage]

    /// A log of one generation (`rin.delivery.inbox` and `delivery-worker.history`).
    public init(
        userId: String, partition: Int32, partitionCount: Int, inbox: [KafkaMessage], history: [KafkaMessage],
        outputs: [KafkaMessage]
    ) {
        self.init(
            userId: userId,
            generations: [LogGeneration(generation: 1, topic: Topics.deliveryInbox, partition: partition, partitionCount: partitionCount)],
            inbox: inbox, history: history, outputs: outputs)
    }

    /// A log of the `generations` given (at least one), messages of any of them mixed.
    public init(
        userId: String, generations: [LogGeneration], inbox: [KafkaMessage], history: [KafkaMessage], outputs: [KafkaMessage]
    ) {
        let sorted = generations.sorted { $0.generation < $1.generation }
        self.userId = userId
        self.generations = sorted
        self.partition = sorted.last?.partition ?? 0
        self.partitionCount = sorted.last?.partitionCount ?? 0
        self.inbox = inbox
        self.history = history.filter { $0.keyText == userId }
        self.outputs = outputs.filter { $0.keyText == userId }
    }

    /// The topics whose user partition an explanation reads.
    public static let outputTopics = [Topics.decisions, Topics.deliveries, Topics.sections, Topics.retentionEvents]

    /// The log and history topics of generations 1 through `generations`, then the output topics.
    public static func topics(generations: Int = 1) -> [String] {
        let own = (1...max(1, generations)).map { Worker.delivery.topics(generation: $0) }
        return own.map(\.log) + own.map(\.history) + outputTopics
    }

    /// Reads the user's partition of every topic of `topics(generations:)`, each to its end as of
    /// the call.
    ///
    /// The partition is computed per topic with the producers' partitioner, so each generation is
    /// read where this user's records went, and a topic whose partition count drifted (which
    /// `fleetctl topics check` reports) still is.
    public static func read(user: String, from reader: FleetTopicReader, generations: Int = 1) async throws -> UserLog {
        let names = topics(generations: generations)
        let counts = try await reader.partitionCounts(names)
        var byPartition: [Int32: [String]] = [:]
        for topic in names {
            let count = counts[topic] ?? 1
            byPartition[KeyPartitioner.partition(forKey: user, partitions: count), default: []].append(topic)
        }
        var messages: [KafkaMessage] = []
        for (partition, group) in byPartition.sorted(by: { $0.key < $1.key }) {
            messages += try await reader.read(group, partitions: [partition])
        }
        let logs = (1...max(1, generations)).map { generation in
            let topic = Worker.delivery.topics(generation: generation).log
            let count = counts[topic] ?? 1
            return LogGeneration(
                generation: generation, topic: topic, partition: KeyPartitioner.partition(forKey: user, partitions: count),
                partitionCount: count)
        }
        let histories = Set((1...max(1, generations)).map { Worker.delivery.topics(generation: $0).history })
        let logNames = Set(logs.map(\.topic))
        return UserLog(
            userId: user, generations: logs,
            inbox: messages.filter { logNames.contains($0.topic) },
            history: messages.filter { histories.contains($0.topic) },
            outputs: messages.filter { outputTopics.contains($0.topic) })
    }
}

extension KafkaMessage {
    var keyText: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
