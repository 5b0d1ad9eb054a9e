public import Kafka

/// The producer the runtime ships units (and restore markers and cuts) through:
/// `KafkaProducer` in production, an in-memory log's producer in fast tests.
///
/// What the runtime relies on:
///
/// - **Acknowledged means durable**: when `send` returns, every record is in the log (for a
///   transactional producer: in the open transaction), each partition's records in the order
///   given. A record without a partition goes where murmur2 of its key says
///   (`KeyPartitioner`), as the fleet's other writers partition.
/// - **At-least-once sends**: a failed `send` may still have written some records; the runtime
///   redoes the unit, and re-sent records are exact copies.
/// - **Transactions** (exactly-once): `beginTransaction`, `send`s, `sendOffsetsToTransaction`,
///   then `commitTransaction` makes the records visible to read_committed readers and commits
///   the offsets atomically with them; `abortTransaction` (or a crash) leaves the records
///   invisible forever and the offsets unchanged. Offsets from a membership that is no longer
///   current are refused. A fatal or fenced error (`KafkaError.isFatal`, `.isFenced`) means this
///   producer can do nothing more.
public protocol LogProducer: AnyObject, Sendable {
    /// Produces `records` and waits for every acknowledgement; one report per record, in order.
    func send(_ records: [ProducerRecord]) async throws(KafkaError) -> [DeliveryReport]
    /// Produces the records of `parts`, one part after the other, as `send` of their
    /// concatenation would (a failed record's `KafkaError.recordIndex` counts across the parts),
    /// without building it: a unit is shipped as its partitions' parts.
    func send(contentsOf parts: [[ProducerRecord]]) async throws(KafkaError)
    /// Waits until every record sent is acknowledged.
    func flush(timeout: Duration) async throws(KafkaError)
    /// Learns where these topics' partitions live before the first `send` to them, so that
    /// the first unit after a start does not wait for it. Writes nothing.
    func prepare(topics: [String], timeout: Duration) async throws(KafkaError)
    func initTransactions(timeout: Duration) async throws(KafkaError)
    func beginTransaction() throws(KafkaError)
    /// Adds consumed offsets (next offsets to read) to the open transaction, for `membership`.
    func sendOffsetsToTransaction(_ offsets: [TopicPartition: Int64], membership: LogGroupMembership) async throws(KafkaError)
    func commitTransaction(timeout: Duration) async throws(KafkaError)
    func abortTransaction(timeout: Duration) async throws(KafkaError)
    func close(timeout: Duration) async
}

extension KafkaProducer: LogProducer {
    public func sendOffsetsToTransaction(
        _ offsets: [TopicPartition: Int64], membership: LogGroupMembership
    ) async throws(KafkaError) {
        guard case .kafka(let metadata) = membership else {
            throw KafkaError(code: -1, name: "INVALID_ARG", message: "a Kafka transaction needs a Kafka consumer's group metadata")
        }
        try await sendOffsetsToTransaction(offsets, groupMetadata: metadata, timeout: .seconds(30))
    }
}
