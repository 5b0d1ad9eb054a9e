public import FleetModel
public import Kafka

extension KafkaRecords {
    /// A record of the previous generation's log, copied into the current one after a partition
    /// migration: same key, value and timestamp, and provenance naming its origin — the
    /// provenance it already carried (a forward, an upstream output) or, for a record first
    /// written into the old log, where it was read there. Folding the copy therefore derives the
    /// same ids the old generation would have (`OutputIDs`).
    public static func carryOver(_ message: KafkaMessage, to log: String, in namespace: TopicNamespace) -> ProducerRecord {
        let origin = origin(of: message)
        var headers = [
            KafkaHeader(Header.sourceTopic, origin.coordinates.topic),
            KafkaHeader(Header.sourcePartition, String(origin.coordinates.partition)),
            KafkaHeader(Header.sourceOffset, String(origin.coordinates.offset)),
        ]
        if let index = origin.index { headers.append(KafkaHeader(Header.sourceIndex, String(index))) }
        return ProducerRecord(
            topic: namespace.physical(log), key: message.key, value: message.value, headers: headers,
            timestamp: message.timestamp)
    }
}
