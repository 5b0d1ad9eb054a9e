public import Kafka

/// The consumer the runtime folds through: a member of the worker's consumer group on the
/// subscribed topics (`KafkaConsumer` in production, an in-memory log's member in fast tests).
///
/// What the runtime relies on, and every conformer must give:
///
/// - **read_committed**: `batches` hands out only records of committed transactions (and
///   non-transactional ones), in offset order within a partition; aborted records and
///   transaction markers are never handed out, though they take offsets (so offsets have gaps).
/// - **Rebalance events before the change applies**: the handler given to `subscribe` is awaited
///   before an assignment change takes effect. On `revoked` the partitions are still this
///   member's, so their work can still be committed; on `lost` they are someone else's already;
///   on `assigned` the partitions of `pausingOnAssignment` topics are paused before any of their
///   records can be handed out, and each starts at the group's committed offset (the beginning
///   when none is committed).
/// - **Pause purges**: after `pause` returns, no record of those partitions is handed out until
///   `resume`, not even one fetched before the pause; `resume` continues from the position after
///   the last record handed out (or where `seek` moved it).
/// - **Commits name the next offset to read** (last processed + 1), for this member's current
///   group generation: a member that was rebalanced away cannot overwrite its successor's offsets.
public protocol LogConsumer: AnyObject, Sendable {
    /// Joins the group for `topics`; see the type's notes for `onRebalance`.
    func subscribe(topics: [String], pausingOnAssignment: Set<String>, onRebalance: RebalanceHandler?) throws(KafkaError)

    /// Non-empty batches of records; ends (nil) after `close` or when the iterating task is
    /// cancelled. Iterated by one task.
    var recordBatches: any AsyncSequence<[KafkaMessage], any Error> & Sendable { get }

    /// This member's group membership now, for `LogProducer.sendOffsetsToTransaction`.
    func membership() throws(KafkaError) -> LogGroupMembership

    func pause(_ partitions: [TopicPartition]) throws(KafkaError)
    func resume(_ partitions: [TopicPartition]) throws(KafkaError)
    /// Moves assigned partitions' positions: the next record handed out of each is at its offset
    /// (`KafkaConsumer.beginning` for the first retained one).
    func seek(_ offsets: [TopicPartition: Int64], timeout: Duration) async throws(KafkaError)
    /// Commits the group's offsets (at-least-once) and waits for the answer.
    func commit(_ offsets: [TopicPartition: Int64]) async throws(KafkaError)
    /// The group's committed offsets; partitions with nothing committed are absent.
    func committed(_ partitions: [TopicPartition], timeout: Duration) async throws(KafkaError) -> [TopicPartition: Int64]
    /// The partition's first retained offset and the offset its next record will get.
    func queryWatermarks(_ partition: TopicPartition, timeout: Duration) async throws(KafkaError) -> Watermarks
    /// Leaves the group (the handler sees the final revocation) and ends `recordBatches`.
    func close() async
}

/// A consumer's group membership as a transaction's offsets name it, so the log can refuse
/// offsets from a member that is no longer current (zombie fencing).
public enum LogGroupMembership: Sendable {
    /// librdkafka's opaque snapshot.
    case kafka(ConsumerGroupMetadata)
    /// A member of an in-memory log's group, at a group generation.
    case member(group: String, member: String, generation: Int)
}

extension KafkaConsumer: LogConsumer {
    public var recordBatches: any AsyncSequence<[KafkaMessage], any Error> & Sendable { batches }

    public func membership() throws(KafkaError) -> LogGroupMembership { .kafka(try groupMetadata()) }
}
