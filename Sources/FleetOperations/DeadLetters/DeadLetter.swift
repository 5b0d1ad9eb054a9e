import Foundation
public import FleetModel
public import FleetWorkers
public import Kafka

/// One record of a `<topic>.dlq` topic as the worker wrote it (`KafkaRecords.deadLetter`): the
/// failed record's key, value and timestamp, the error, the failed record's identity, and when
/// it was dead-lettered.
public struct DeadLetter: Hashable, Sendable {
    public var id: DeadLetterID
    /// Where the dead letter itself is (logical `<topic>.dlq` name).
    public var position: SourceCoordinates
    public var error: String
    public var key: [UInt8]?
    public var value: [UInt8]?
    /// The failed record's own timestamp: its `source-timestamp` header, else (dead letters
    /// written before that header) the dead letter's timestamp unless the broker set it.
    public var timestamp: Timestamp?
    /// When it was dead-lettered: the dead letter's timestamp where the broker set it on append
    /// (`LogAppendTime`, as `fleetctl topics create` makes dead-letter topics); nil on a
    /// dead-letter topic still on `CreateTime`, or a broker that ignores the setting.
    public var deadLetteredAt: Timestamp?
    public var headers: [KafkaHeader]
    /// Set when the failed record was itself a redriven copy: the dead letter it came from.
    public var redrivenFrom: String?
    /// Set when the original value was too large to carry (header `value-omitted: reference`):
    /// where it was read, its sizes, SHA-256 and first bytes. `value` is then the reference
    /// until `DeadLetterTool.resolvingReferences` fetches the original from the source topic.
    public var reference: DeadLetterReference?
    /// Why the original of a reference could not be fetched (retention, a different record).
    public var originalUnavailable: String?

    /// Reads a dead letter; nil for a redrive marker or a record without the dead-letter headers.
    public init?(_ message: KafkaMessage) {
        guard message.header(RedriveMarker.Header.redriveOf) == nil,
              let topic = message.text(KafkaRecords.Header.sourceTopic),
              let partition = message.text(KafkaRecords.Header.sourcePartition).flatMap({ Int32($0) }),
              let offset = message.text(KafkaRecords.Header.sourceOffset).flatMap({ Int64($0) })
        else { return nil }
        id = DeadLetterID(
            origin: SourceCoordinates(topic: topic, partition: partition, offset: offset),
            index: message.text(KafkaRecords.Header.sourceIndex).flatMap { Int($0) })
        position = KafkaRecords.coordinates(message)
        error = message.text(KafkaRecords.Header.error) ?? ""
        key = message.key
        value = message.value
        let own = message.timestamp.map { Timestamp(millisecondsSinceEpoch: $0) }
        let appended = message.timestampType == .logAppendTime
        if let header = message.text(KafkaRecords.Header.sourceTimestamp), let milliseconds = Int64(header) {
            timestamp = Timestamp(millisecondsSinceEpoch: milliseconds)
        } else {
            timestamp = appended ? nil : own
        }
        deadLetteredAt = appended ? own : nil
        headers = message.headers
        redrivenFrom = message.text(KafkaRecords.Header.redrivenFrom)
        if message.text(KafkaRecords.Header.valueOmitted) == DeadLetterReference.headerValue, let value = message.value {
            reference = DeadLetterReference.decode(value)
        }
    }

    public var keyText: String? { key.map { String(decoding: $0, as: UTF8.self) } }

    /// The value as JSON, if it is JSON at all (dead letters are often not).
    public var json: JSONValue? {
        guard let value, let parsed = try? JSONDecoder().decode(JSONValue.self, from: Data(value)) else { return nil }
        return parsed
    }

    /// `user_id` (else the key) and `type` of the value when it has them, for the table.
    public var userId: String? { reference == nil ? json?["user_id"]?.stringValue ?? keyText : keyText }
    public var type: String? { reference == nil ? json?["type"]?.stringValue : "(\(reference?.valueBytes ?? 0) bytes, by reference)" }
}

/// A record `fleetctl dlq redrive` appends to the dead-letter topic after sending a copy: it
/// says which dead letter was redriven and where the copy went, so that a second redrive of the
/// same dead letter is refused (unless forced) by reading only the small DLQ topic, never the
/// source topic, which can be large. Its value is null; `dlq list` shows it as the dead letter's
/// status, not as a row.
public struct RedriveMarker: Hashable, Sendable {
    public enum Header {
        /// The dead letter redriven, `topic.dlq:partition:offset`.
        public static let redriveOf = "redrive-of"
        /// Where the copy landed, `topic:partition:offset`.
        public static let redrivenTo = "redriven-to"
    }

    public var deadLetter: SourceCoordinates
    public var copy: SourceCoordinates
    /// When the redrive happened (the producer's clock: the marker has no log time to keep).
    public var timestamp: Timestamp?

    public init(deadLetter: SourceCoordinates, copy: SourceCoordinates, timestamp: Timestamp? = nil) {
        self.deadLetter = deadLetter
        self.copy = copy
        self.timestamp = timestamp
    }

    /// Reads a marker; nil for any other record.
    public init?(_ message: KafkaMessage) {
        guard let of = message.text(Header.redriveOf).flatMap(DeadLetterID.init), of.index == nil,
              let to = message.text(Header.redrivenTo).flatMap(DeadLetterID.init), to.index == nil
        else { return nil }
        self.init(deadLetter: of.origin, copy: to.origin, timestamp: message.timestamp.map { Timestamp(millisecondsSinceEpoch: $0) })
    }

    /// The marker record: keyed like the dead letter, on its partition, so it follows it.
    public func record(key: [UInt8]?, in namespace: TopicNamespace) -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(deadLetter.topic), partition: deadLetter.partition, key: key, value: nil,
            headers: [KafkaHeader(Header.redriveOf, deadLetter.description), KafkaHeader(Header.redrivenTo, copy.description)])
    }
}

extension KafkaMessage {
    func text(_ header: String) -> String? { self.header(header).map { String(decoding: $0, as: UTF8.self) } }
}
