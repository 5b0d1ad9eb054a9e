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

    /// An output for another worker's inbox, carrying its provenance: the coordinates of the step
    /// that produced it and its position among that step's outputs. The inbox's owner derives
    /// ids from them instead of from the inbox offset (see `OutputIDs`), so re-sent copies and
    /// the interleaving of writers cannot change an id.
    public static func producerRecord(
        _ output: OutputRecord, from step: SourceCoordinates, index: Int, in namespace: TopicNamespace
    ) -> ProducerRecord {
        var record = producerRecord(output, in: namespace)
        record.headers = provenanceHeaders(step) + [KafkaHeader(Header.sourceIndex, String(index))]
        return record
    }

    /// The ingest stage's copy of an external record for its worker's inbox: same key, value and
    /// timestamp, plus the source coordinates (DESIGN.md principle 3). Validation happened before.
    public static func forward(_ message: KafkaMessage, to inbox: String, in namespace: TopicNamespace) -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(inbox), key: message.key, value: message.value,
            headers: provenanceHeaders(coordinates(message)), timestamp: message.timestamp)
    }

    /// The identity a folded record's ids derive from: its provenance headers when a fleet
    /// worker wrote it, else where it was read.
    public static func origin(of message: KafkaMessage) -> (coordinates: SourceCoordinates, index: Int?) {
        guard let topic = message.header(Header.sourceTopic).map({ String(decoding: $0, as: UTF8.self) }),
              let partition = message.header(Header.sourcePartition).flatMap({ Int32(String(decoding: $0, as: UTF8.self)) }),
              let offset = message.header(Header.sourceOffset).flatMap({ Int64(String(decoding: $0, as: UTF8.self)) })
        else { return (coordinates(message), nil) }
        let index = message.header(Header.sourceIndex).flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        return (SourceCoordinates(topic: topic, partition: partition, offset: offset), index)
    }

    /// Header names for provenance and dead letters.
    public enum Header {
        public static let error = "error"
        public static let sourceTopic = "source-topic"
        public static let sourcePartition = "source-partition"
        public static let sourceOffset = "source-offset"
        public static let sourceIndex = "source-index"
    }

    private static func provenanceHeaders(_ source: SourceCoordinates) -> [KafkaHeader] {
        [
            KafkaHeader(Header.sourceTopic, source.topic),
            KafkaHeader(Header.sourcePartition, String(source.partition)),
            KafkaHeader(Header.sourceOffset, String(source.offset)),
        ]
    }

    /// The dead-letter copy of `message`: original key and value, and headers naming the error
    /// and where the record came from (DESIGN.md principle 7).
    public static func deadLetter(_ message: KafkaMessage, error: RecordError, in namespace: TopicNamespace) -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(Topics.deadLetter(of: message.topic)), key: message.key, value: message.value,
            headers: [KafkaHeader(Header.error, error.message)] + provenanceHeaders(coordinates(message)),
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
