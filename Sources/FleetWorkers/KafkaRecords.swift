import Crypto
public import FleetModel
public import Kafka

/// How fleet records become Kafka records and back: keyed by `user_id`, timestamped with log
/// time, values in canonical encoding (so a re-run writes identical bytes). `KafkaMessage`s here
/// carry logical topic names (see `TopicNamespace`).
public enum KafkaRecords {
    /// `output` as the Kafka record to write to `physicalTopic` (its topic in the worker's
    /// namespace and generation, `OutputDestination`), with `value` its canonical encoding.
    ///
    /// Always inlined: called, it took a copy of the whole output (a retain and a release of
    /// every string it holds) for the two fields it reads.
    @inline(__always)
    public static func producerRecord(_ output: borrowing OutputRecord, value: consuming [UInt8], physicalTopic: String) -> ProducerRecord {
        ProducerRecord(
            topic: physicalTopic, key: output.key.isEmpty ? nil : Array(output.key.utf8),
            value: value, timestamp: output.timestamp.millisecondsSinceEpoch)
    }

    /// An output for another worker's inbox, carrying its provenance: the coordinates of the step
    /// that produced it and its position among that step's outputs. The inbox's owner derives
    /// ids from them instead of from the inbox offset (see `OutputIDs`), so re-sent copies and
    /// the interleaving of writers cannot change an id.
    public static func producerRecord(
        _ output: borrowing OutputRecord, value: consuming [UInt8], physicalTopic: String, from step: SourceCoordinates, index: Int
    ) -> ProducerRecord {
        var record = producerRecord(output, value: value, physicalTopic: physicalTopic)
        record.headers = provenanceHeaders(step) + [KafkaHeader(Header.sourceIndex, String(index))]
        return record
    }

    /// The same, encoding `output` and writing to its topic in `namespace`.
    public static func producerRecord(
        _ output: OutputRecord, from step: SourceCoordinates, index: Int, in namespace: TopicNamespace
    ) -> ProducerRecord {
        producerRecord(
            output, value: RecordCodec.encode(output.record), physicalTopic: namespace.physical(output.topic), from: step,
            index: index)
    }

    /// A copy of `message` for a worker's log, naming its origin: same key, value and timestamp,
    /// plus `origin(of:)` in provenance headers. Validation happened before.
    ///
    /// The ingest stage's copy of an external record carries where it was read (DESIGN.md
    /// principle 3); a redriven record keeps the coordinates it was dead-lettered at; a record of
    /// the previous generation's log carried over after a partition migration keeps the
    /// provenance it already had (or, first written there, where it was read). So the log's
    /// owner folds each with the ids it would have had.
    public static func forward(_ message: KafkaMessage, to log: String, in namespace: TopicNamespace) -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(log), key: message.key, value: message.value,
            headers: originHeaders(message), timestamp: message.timestamp)
    }

    /// The identity a folded record's ids derive from: its provenance headers when a fleet
    /// worker wrote it, else where it was read.
    ///
    /// Provenance headers are believed only where they cannot be forged from outside the fleet:
    /// on an inbox, which only fleet workers write, and on any other topic only for a redrive
    /// (`fleetctl dlq redrive`: the `redriven-from` header) naming an earlier position of the
    /// topic it was read from. An external producer can therefore at most make its record take
    /// the ids of another record of a topic it already writes to, never those of another topic
    /// or of a fleet worker's output.
    public static func origin(of message: KafkaMessage) -> (coordinates: SourceCoordinates, index: Int?) {
        guard let claimed = provenance(of: message) else { return (coordinates(message), nil) }
        if isInbox(message.topic) { return claimed }
        let coordinates = claimed.coordinates
        guard message.header(Header.redrivenFrom) != nil, claimed.index == nil, coordinates.topic == message.topic,
              coordinates.partition != message.partition || coordinates.offset < message.offset
        else { return (Self.coordinates(message), nil) }
        return claimed
    }

    /// The provenance headers of `message`, if it has all three coordinates.
    private static func provenance(of message: KafkaMessage) -> (coordinates: SourceCoordinates, index: Int?)? {
        guard let topic = message.header(Header.sourceTopic).map({ String(decoding: $0, as: UTF8.self) }),
              let partition = message.header(Header.sourcePartition).flatMap({ Int32(String(decoding: $0, as: UTF8.self)) }),
              let offset = message.header(Header.sourceOffset).flatMap({ Int64(String(decoding: $0, as: UTF8.self)) })
        else { return nil }
        let index = message.header(Header.sourceIndex).flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        return (SourceCoordinates(topic: topic, partition: partition, offset: offset), index)
    }

    /// The topics only fleet workers write (ingest stages, upstream workers, ticks, redrives):
    /// their provenance headers are trusted as they are.
    public static let inboxes: Set<String> = [Topics.deliveryInbox, Topics.reminderInbox]

    /// Whether `topic` (logical) is an inbox, in any generation.
    public static func isInbox(_ topic: String) -> Bool {
        inboxes.contains(Topics.generationBase(of: topic).base)
    }

    /// The headers of a redriven copy of a dead letter (`fleetctl dlq redrive`): the identity
    /// the dead-lettered record had (its `source-*` headers in the DLQ) and the dead letter's own
    /// coordinates (`topic.dlq:partition:offset`), which mark the copy as a redrive.
    public static func redriveHeaders(origin: SourceCoordinates, index: Int?, redrivenFrom: String) -> [KafkaHeader] {
        provenanceHeaders(origin) + (index.map { [KafkaHeader(Header.sourceIndex, String($0))] } ?? [])
            + [KafkaHeader(Header.redrivenFrom, redrivenFrom)]
    }

    /// Header names for provenance and dead letters.
    public enum Header {
        public static let error = "error"
        public static let sourceTopic = "source-topic"
        public static let sourcePartition = "source-partition"
        public static let sourceOffset = "source-offset"
        public static let sourceIndex = "source-index"
        /// On a dead letter: the failed record's own timestamp (milliseconds since the epoch).
        /// The dead letter's timestamp is when it was dead-lettered where its topic is
        /// `LogAppendTime` (as `fleetctl topics create` makes it), so the record's travels here.
        public static let sourceTimestamp = "source-timestamp"
        /// On a redriven copy: the coordinates of the dead letter it was made from.
        public static let redrivenFrom = "redriven-from"
        /// On a dead letter whose original value was too large to carry: `reference` (the value
        /// is a `DeadLetterReference`, see `deadLetter(_:error:in:limits:)`).
        public static let valueOmitted = "value-omitted"
        /// On a dead letter the runtime wrote after the input's outputs failed to produce
        /// again and again (`FoldCore`'s quarantine): how many unit attempts failed.
        public static let quarantined = "quarantined-after"
        /// On an output whose id is its own (`OutputRecord.hasOwnId`, the sender's attempts):
        /// the stem of the step that wrote it (`OutputIDs.stem`, `topic:partition:offset` of the
        /// step's origin, plus its origin index when it has one), which the id does not carry.
        public static let sourceStep = "source-step"
    }

    /// The `redriven-from` header of `message`, if any, to carry along with it.
    private static func redriveTrace(_ message: KafkaMessage) -> [KafkaHeader] {
        message.header(Header.redrivenFrom).map { [KafkaHeader(Header.redrivenFrom, $0)] } ?? []
    }

    private static func provenanceHeaders(_ source: SourceCoordinates) -> [KafkaHeader] {
        [
            KafkaHeader(Header.sourceTopic, source.topic),
            KafkaHeader(Header.sourcePartition, String(source.partition)),
            KafkaHeader(Header.sourceOffset, String(source.offset)),
        ]
    }

    /// The dead-letter copy of `message`: original key, value and timestamp, and headers naming
    /// the error, where the record came from (DESIGN.md principle 7) and its timestamp (which
    /// a `LogAppendTime` dead-letter topic replaces with the time it was dead-lettered).
    ///
    /// "Where it came from" is the record's origin, the identity its ids derive from: where it
    /// was read, except for a record carrying trusted provenance (see `origin(of:)`), such as a
    /// redriven copy, which names its original coordinates (and `source-index`, if any). So a
    /// record keeps one identity however often it fails and is redriven.
    ///
    /// A dead letter always fits (DESIGN.md principle 7): a record whose key and value exceed
    /// `limits.maxRecordBytes` is carried by reference instead — where it was read, its sizes,
    /// its SHA-256 and its first bytes (`DeadLetterReference`) — with the `value-omitted:
    /// reference` header; `fleetctl dlq` shows it and re-drives it from the source topic.
    public static func deadLetter(
        _ message: KafkaMessage, error: RecordError, in namespace: TopicNamespace, limits: RecordLimits = .standard,
        extraHeaders: [KafkaHeader] = []
    ) -> ProducerRecord {
        let keyBytes = message.key?.count ?? 0
        let valueBytes = message.value?.count ?? 0
        var headers = [KafkaHeader(Header.error, error.message)] + originHeaders(message) + extraHeaders
        if let timestamp = message.timestamp { headers.append(KafkaHeader(Header.sourceTimestamp, String(timestamp))) }
        var key = message.key
        var value = message.value
        if keyBytes + valueBytes > limits.maxRecordBytes {
            let reference = DeadLetterReference(
                topic: message.topic, partition: message.partition, offset: message.offset, keyBytes: keyBytes,
                valueBytes: valueBytes, sha256: sha256Hex(message.value ?? []),
                prefix: String(decoding: (message.value ?? []).prefix(DeadLetterReference.prefixBytes), as: UTF8.self))
            value = reference.encoded()
            if keyBytes > RecordLimits.identifierBytes { key = nil }
            headers.append(KafkaHeader(Header.valueOmitted, DeadLetterReference.headerValue))
        }
        return ProducerRecord(
            topic: namespace.physical(Topics.deadLetter(of: message.topic)), key: key, value: value, headers: headers,
            timestamp: message.timestamp)
    }

    /// Lower-case hex SHA-256 of `bytes`, as a dead-letter reference names its original value.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        let hex: [Character] = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(64)
        for byte in SHA256.hash(data: bytes) {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return text
    }

    /// `origin(of:)` as headers: the coordinates, the index when there is one, and a redrive's
    /// trace.
    private static func originHeaders(_ message: KafkaMessage) -> [KafkaHeader] {
        let origin = origin(of: message)
        let index = origin.index.map { [KafkaHeader(Header.sourceIndex, String($0))] } ?? []
        return provenanceHeaders(origin.coordinates) + index + redriveTrace(message)
    }

    /// Decodes a consumed record, checking that its key is its user (records are partitioned by
    /// user, so a mismatch would put state on the wrong partition).
    ///
    /// The record's size is checked first (`limits.maxRecordBytes`), before any of it is parsed.
    public static func decode(_ message: KafkaMessage, limits: RecordLimits = .standard) throws(RecordError) -> FleetRecord {
        guard let value = message.value else { throw RecordError("record has no value") }
        try limits.checkRecordSize(keyBytes: message.key?.count ?? 0, valueBytes: value.count)
        let record = try RecordCodec.decode(value, topic: message.topic)
        if case .tick = record { return record }
        // A key with exactly the user id's bytes is that user id. Only another key is made a
        // `String` and compared as one (canonical equivalence, repaired bytes); every key used
        // to be, a string made per record for a key that nearly always matches.
        if let key = message.key, record.userId.withUTF8Bytes({ $0.elementsEqual(key) }) { return record }
        let key = message.key.map { String(decoding: $0, as: UTF8.self) } ?? ""
        if key != record.userId {
            throw RecordError("record key \(RecordError.quote(key)) differs from user_id \(RecordError.quote(record.userId))")
        }
        return record
    }

    public static func coordinates(_ message: KafkaMessage) -> SourceCoordinates {
        SourceCoordinates(topic: message.topic, partition: message.partition, offset: message.offset)
    }
}
