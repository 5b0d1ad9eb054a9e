public import Kafka
public import Logging

/// The metadata the runtime checks at start and while running: how many partitions each topic
/// has (`KafkaAdmin` in production).
public protocol LogAdmin: Sendable {
    /// The partition count of each named topic that exists; missing topics are absent.
    func partitionCounts(of topics: [String]) async throws(KafkaError) -> [String: Int]
}

extension KafkaAdmin: LogAdmin {
    public func partitionCounts(of topics: [String]) async throws(KafkaError) -> [String: Int] {
        try await partitionCounts(topics: topics, timeout: .seconds(10), failFast: nil)
    }
}

/// Reads a changelog partition for a restore (`StateRestorer`): every record from an offset up
/// to one known to exist (the restore's own marker), in offset order, read_committed — a state
/// written by a transaction that aborted or never committed is never read.
public protocol ChangelogReading: Sendable {
    /// Hands each record of `partition` at or after `start` (`KafkaConsumer.beginning` for the
    /// first retained) and below `end` to `images`; waits for a record at or past `end` up to
    /// `timeout`.
    func read(
        _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration, into images: ChangelogImages
    ) async throws -> ChangelogImages

    /// The users counted by the last position record in `partition` between `start` and `end`
    /// (nil: none there): the hint a large restore sizes its tables with. An offset before the
    /// log start reads from the log start.
    func lastCountedUsers(
        _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration
    ) async throws -> Int?
}

/// `ChangelogReading` on the brokers: one `KafkaPartitionReader` per read, lending records from
/// librdkafka's buffers (nothing is copied unless kept).
public struct KafkaChangelogReader: ChangelogReading {
    public var configuration: KafkaConfiguration
    public var logger: Logger

    public init(configuration: KafkaConfiguration, logger: Logger) {
        var configuration = configuration
        // The reader sets it (off) unless the configuration does; `KafkaPartitionReader.bulkProperties`
        // fill in the other fetch settings `KAFKA_*` variables leave unset.
        configuration["enable.partition.eof"] = nil
        self.configuration = configuration
        self.logger = logger
    }

    public func read(
        _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration, into images: ChangelogImages
    ) async throws -> ChangelogImages {
        let topic = partition.topic
        return try await KafkaPartitionReader.read(
            partition, from: start, until: end, configuration: configuration, timeout: timeout, logger: logger, into: images
        ) { images, record in
            try images.read(record, topic: topic)
        }
    }

    public func lastCountedUsers(
        _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration
    ) async throws -> Int? {
        var tail = configuration
        // An offset before the log start reads from the log start: still within the window.
        tail["auto.offset.reset"] = "earliest"
        let topic = partition.topic
        return try await KafkaPartitionReader.read(
            partition, from: start, until: end, configuration: tail, timeout: timeout, logger: logger, into: Int?.none
        ) { users, record in
            if let kind = record.header(ChangelogRecords.kindHeader), kind.elementsEqual(ChangelogRecords.positionKindBytes),
               case .position(_, _, let counted?) = try? ChangelogRecords.controlEntry(of: record.message(topic: topic)) {
                users = counted
            }
        }
    }
}
