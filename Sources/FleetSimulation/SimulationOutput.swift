public import FleetModel

/// One output record of a simulation, printed as one JSONL line:
/// `{"at": "<time it was produced>", "topic": "<topic>", "key": "<user id>", "value": {…}}`,
/// the envelope keys in that order and `value` in canonical form (sorted keys).
public struct SimulationOutput: Hashable, Sendable {
    public enum Value: Hashable, Sendable {
        /// A record a stage produced; printed as `RecordCodec` encodes it.
        case record(FleetRecord)
        /// A record refused by validation or by a processor, on `<topic>.dlq`.
        case deadLetter(DeadLetter)
    }

    /// The log time of the stage that produced it (for a dead letter: when it was refused).
    public var at: Timestamp
    public var topic: String
    public var key: String
    public var value: Value

    public init(at: Timestamp, topic: String, key: String, value: Value) {
        self.at = at; self.topic = topic; self.key = key; self.value = value
    }

    /// The record, if this is not a dead letter.
    public var record: FleetRecord? {
        if case .record(let record) = value { return record }
        return nil
    }

    /// The JSONL line, without the newline.
    public var jsonLine: String {
        let valueText = switch value {
        case .record(let record): RecordCodec.encodeString(record)
        case .deadLetter(let letter): JSONText.string(letter)
        }
        return #"{"at":"# + JSONText.quoted(at.rfc3339) + #","topic":"# + JSONText.quoted(topic)
            + #","key":"# + JSONText.quoted(key) + #","value":"# + valueText + "}"
    }
}

/// The value of a simulated dead-letter record. The fleet puts the error and the source
/// coordinates in Kafka headers next to the original value (DESIGN.md "Topics and records");
/// JSONL has no headers, so the simulator wraps them around the original record:
/// `{"error", "record", "source_line"?, "source_offset", "source_partition", "source_topic"}`.
public struct DeadLetter: Codable, Hashable, Sendable {
    /// What is wrong, as the `error` header would say it.
    public var error: String
    /// The record as it was read: the input line's `value`, or the canonical encoding of a
    /// record one stage sent another.
    public var record: JSONValue
    /// The input line the record came from; absent for records produced inside the fleet.
    public var sourceLine: Int?
    /// Where the refused record sits in the emulated log (partition 0 of its topic).
    public var sourceTopic: String
    public var sourcePartition: Int32
    public var sourceOffset: Int64

    enum CodingKeys: String, CodingKey {
        case error, record, sourceLine = "source_line", sourceTopic = "source_topic"
        case sourcePartition = "source_partition", sourceOffset = "source_offset"
    }

    public init(error: String, record: JSONValue, sourceLine: Int?, source: SourceCoordinates) {
        self.error = error; self.record = record; self.sourceLine = sourceLine
        self.sourceTopic = source.topic; self.sourcePartition = source.partition; self.sourceOffset = source.offset
    }
}
