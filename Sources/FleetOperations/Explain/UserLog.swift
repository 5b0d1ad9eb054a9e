import Foundation
public import DeliveryPolicy
public import FleetModel
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
    /// The user's state around each input of a commit unit that changed the user more than
    /// once, re-folded from the nearest images (`UserRefold`), by log position: the history
    /// records only each unit's last image. Each unit is re-folded on its own, from its start,
    /// with the states there of only the users folded in it (`UnitRefold`).
    public var refolded: [SourceCoordinates: RefoldedStep] = [:]

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

    /// How far before `--since` an explanation starts reading the log and the outputs, so the
    /// chains of intents shown keep the arrival and the deferrals that came before the window
    /// (a deferral waits at most until the next morning, a digest a day).
    public static let lookback: TimeSpan = .days(2)

    /// Reads the user's partition of every topic of `topics(generations:)`, each to its end as of
    /// the call, streaming, and keeps only what the explanation can use: the user's history and
    /// outputs, and of the log the user's own records plus the records of the steps those name
    /// (a tick or another user's record that fired the user's timers). Memory grows with the
    /// user's records, not the partition's.
    ///
    /// With `since`, the log and the outputs are read from `since` less `lookback`, found with
    /// offsets-for-times (checked, with a scanning fallback: `FleetTopicReader.offsets(atOrAfter:in:)`);
    /// the history, whose timestamps are the workers' clocks rather than log time, is read whole.
    ///
    /// The partition is computed per topic with the producers' partitioner, so each generation is
    /// read where this user's records went, and a topic whose partition count drifted (which
    /// `fleetctl topics check` reports) still is.
    ///
    /// With `profile` (the delivery worker's), the states inside commit units that changed the
    /// user more than once are re-folded (`refolded`), from the units whose last input is in the
    /// log read: memory grows with the users of those units, not the partition's (issue 16).
    public static func read(
        user: String, from reader: FleetTopicReader, generations: Int = 1, since: Timestamp? = nil, profile: PolicyProfile? = nil
    ) async throws -> UserLog {
        let names = topics(generations: generations)
        let counts = try await reader.partitionCounts(names)
        func place(_ topic: String) -> TopicPartition {
            TopicPartition(topic, KeyPartitioner.partition(forKey: user, partitions: counts[topic] ?? 1))
        }
        let logs = (1...max(1, generations)).map { generation in
            let topic = Worker.delivery.topics(generation: generation).log
            let count = counts[topic] ?? 1
            return LogGeneration(
                generation: generation, topic: topic, partition: KeyPartitioner.partition(forKey: user, partitions: count),
                partitionCount: count)
        }
        let histories = Set((1...max(1, generations)).map { Worker.delivery.topics(generation: $0).history })
        let logNames = logs.map(\.topic)
        var starts: [TopicPartition: Int64] = [:]
        for topic in names { starts[place(topic)] = KafkaConsumer.beginning }
        if let since {
            let seekable = (logNames + outputTopics).map(place)
            for (partition, offset) in try await reader.offsets(atOrAfter: since - lookback, in: seekable) { starts[partition] = offset }
        }
        let userKey = Array(user.utf8)

        // The user's history and outputs first: they name the log positions and stems to keep.
        var history: [KafkaMessage] = []
        var outputs: [KafkaMessage] = []
        var positions = Set<SourceCoordinates>()
        var stems = Set<String>()
        try await reader.stream(starts.filter { !logNames.contains($0.key.topic) }) { message in
            guard message.key == userKey else { return }
            if histories.contains(message.topic) {
                history.append(message)
                if let place = try? ChangelogRecords.historyPlace(of: message) {
                    for offset in place.changed {
                        positions.insert(SourceCoordinates(topic: place.inputTopic, partition: place.inputPartition, offset: offset))
                    }
                }
            } else {
                outputs.append(message)
                if let value = message.value, let record = try? RecordCodec.decode(value, topic: message.topic),
                   let colon = record.id.lastIndex(of: ":")
                {
                    stems.insert(String(record.id[..<colon]))
                }
            }
        }
        var inbox: [KafkaMessage] = []
        try await reader.stream(starts.filter { logNames.contains($0.key.topic) }) { message in
            if message.key == userKey || positions.contains(KafkaRecords.coordinates(message)) || stems.contains(stem(of: message)) {
                inbox.append(message)
            }
        }
        var read = UserLog(userId: user, generations: logs, inbox: inbox, history: history, outputs: outputs)
        if let profile {
            let changes = read.history.compactMap { try? HistoryChange<DeliveryState>($0) }
            for generation in logs {
                let own = changes.filter { $0.form == .unitImage && $0.inputTopic == generation.topic }
                let logStart = starts[place(generation.topic)].flatMap { $0 >= 0 ? $0 : nil }
                read.refolded.merge(
                    try await UserRefold.steps(
                        user: user, history: own, generation: generation, logStart: logStart, profile: profile, reader: reader)
                ) { first, _ in first }
            }
        }
        return read
    }

    /// The prefix every output id of this record's step shares (see `OutputIDs`).
    static func stem(of message: KafkaMessage) -> String {
        let origin = KafkaRecords.origin(of: message)
        return origin.index.map { "\(origin.coordinates):\($0)" } ?? origin.coordinates.description
    }
}

extension KafkaMessage {
    var keyText: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
