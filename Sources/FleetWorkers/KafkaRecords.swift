public import FleetModel
public import Kafka

/// How fleet records become Kafka records and back: keyed by `user_id`, timestamped with log
/// time, values in canonical encoding (so a re-run writes identical bytes). `KafkaMessage`s here
/// carry logical topic names (see `TopicNamespace`).
public enum KafkaRecords {
    public static func producerRecord(_ output: OutputRecord, in namespace: TopicNamespace) -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(output.topic), key: output.key.isEmpty ? nil : Array(output.key.utf8),
            value: RecordCodec.encode(output.record), timestamp: output.timestamp.millisecondsSinceEpoch)
    }

    /// The dead-letter copy of `message`: original key and value, and headers naming the error
    /// and where the record came from (DESIGN.md principle 7).
    public static func deadLetter(_ message: KafkaMessage, error: RecordError, in namespace: TopicNamespace) -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(Topics.deadLetter(of: message.topic)), key: message.key, value: message.value,
            headers: [
                KafkaHeader("error", error.message),
                KafkaHeader("source-topic", message.topic),
                KafkaHeader("source-partition", String(message.partition)),
                KafkaHeader("source-offset", String(message.offset)),
            ],
            timestamp: message.timestamp)
    }

    /// Decodes a consumed record, checking that its key is its user (records are partitioned by
    /// user, so a mismatch would put state on the wrong partition).
    public static func decode(_ message: KafkaMessage) throws(RecordError) -> FleetRecord {
        guard let value = message.value else { throw RecordError("record has no value") }
        let record = try RecordCodec.decode(value, topic: message.topic)
        let key = message.key.map { String(decoding: $0, as: UTF8.self) } ?? ""
        if case .tick = record { return record }
        if key != record.userId {
            throw RecordError("record key '\(key)' differs from user_id '\(record.userId)'")
        }
        return record
    }

    public static func coordinates(_ message: KafkaMessage) -> SourceCoordinates {
        SourceCoordinates(topic: message.topic, partition: message.partition, offset: message.offset)
    }
}
