import CRdKafka

/// An opaque snapshot of a consumer's group membership (group id, generation, member id), taken
/// with `KafkaConsumer.groupMetadata()` and passed to `KafkaProducer.sendOffsetsToTransaction` so
/// the broker can reject offsets from a member that is no longer current (zombie fencing).
public final class ConsumerGroupMetadata: @unchecked Sendable {
    /// Owned `rd_kafka_consumer_group_metadata_t`, immutable, destroyed in `deinit`.
    let raw: OpaquePointer

    init(owning raw: OpaquePointer) {
        self.raw = raw
    }

    deinit {
        rd_kafka_consumer_group_metadata_destroy(raw)
    }
}
