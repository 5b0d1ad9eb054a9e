import Foundation
public import FleetModel
public import Kafka

/// The records a stateful worker writes about itself to `<worker>.state` and `<worker>.history`
/// (DESIGN.md principles 5 and 6), and how they are read back.
///
/// `<worker>.state` holds three kinds, told apart by the `fleet-record` header:
/// - `state`: one user's state after the input record at `input_offset` (key: the user id).
///   Restore keeps, per user, the last one whose `input_offset` is below the committed input
///   offset; later ones come from an attempt that never committed.
/// - `position`: the partition's log time after the input record at `input_offset` (key
///   `#position`, written to the partition explicitly). Log time moves on records that change no
///   state (a tick, a duplicate), so it cannot be recovered from the user states alone, and a
///   restored partition must resume with exactly the time an uninterrupted one would have.
/// - `marker`: written by a member that starts restoring the partition (key `#restore`): reading
///   up to one's own marker proves every earlier record was read, without trusting the broker's
///   high watermark (which the local test broker reports wrong).
///
/// - `cut`: written once a migration to a new generation stopped folding the partition (key
///   `#cut`): the committed input offset at which the fold stopped, for `fleetctl partitions
///   migrate` to re-key exactly the committed states, and so a member still on the old generation
///   that is handed the partition sees it must not fold it any more. The first cut counts.
/// A state or position record with `input_offset` -1 was re-keyed by a migration into a new
/// generation: it precedes every input of that generation.
///
/// `<worker>.history` holds `change` records: a user's state before and after one input record,
/// with that record's coordinates, for replay and explain.
public enum ChangelogRecords {
    public static let kindHeader = "fleet-record"

    public enum Kind: String, Sendable {
        case state, position, marker, change, cut
    }

    public static let positionKey = "#position"
    public static let markerKey = "#restore"
    public static let cutKey = "#cut"
    /// The input offset of state and position records a migration re-keyed into a new generation.
    public static let migratedInputOffset: Int64 = -1

    // MARK: Writing

    /// A user's state as of the input record at `inputOffset`.
    public static func state(
        userId: String, stateJSON: [UInt8], inputOffset: Int64, topic: String, partition: Int32
    ) -> ProducerRecord {
        var value: [UInt8] = []
        value.reserveCapacity(stateJSON.count + userId.utf8.count + 64)
        append(#"{"input_offset":"#, to: &value)
        append(String(inputOffset), to: &value)
        append(#","state":"#, to: &value)
        value.append(contentsOf: stateJSON)
        append(#","user_id":"#, to: &value)
        appendJSONString(userId, to: &value)
        append(#","v":1}"#, to: &value)
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(userId.utf8), value: value,
            headers: [KafkaHeader(kindHeader, Kind.state.rawValue)])
    }

    /// The partition's log time as of the input record at `inputOffset`.
    public static func position(logTime: Timestamp, inputOffset: Int64, topic: String, partition: Int32) -> ProducerRecord {
        let value = #"{"input_offset":\#(inputOffset),"log_time":"\#(logTime)","v":1}"#
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(positionKey.utf8), value: Array(value.utf8),
            headers: [KafkaHeader(kindHeader, Kind.position.rawValue)])
    }

    /// A restore marker carrying `nonce`, unique to one restore attempt.
    public static func marker(nonce: String, topic: String, partition: Int32) -> ProducerRecord {
        var value: [UInt8] = []
        append(#"{"nonce":"#, to: &value)
        appendJSONString(nonce, to: &value)
        append(#","v":1}"#, to: &value)
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(markerKey.utf8), value: value,
            headers: [KafkaHeader(kindHeader, Kind.marker.rawValue)])
    }

    /// The fold of this partition stopped at `committedOffset` for the move to `generation`.
    public static func cut(generation: Int, committedOffset: Int64, topic: String, partition: Int32) -> ProducerRecord {
        let value = #"{"committed_offset":\#(committedOffset),"generation":\#(generation),"v":1}"#
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(cutKey.utf8), value: Array(value.utf8),
            headers: [KafkaHeader(kindHeader, Kind.cut.rawValue)])
    }

    /// One state change for `<worker>.history`. `before` is nil for a user never stored.
    public static func change(
        userId: String, before: [UInt8]?, after: [UInt8], input: SourceCoordinates, logTime: Timestamp,
        topic: String, partition: Int32
    ) -> ProducerRecord {
        var value: [UInt8] = []
        value.reserveCapacity((before?.count ?? 4) + after.count + userId.utf8.count + 160)
        append(#"{"after":"#, to: &value)
        value.append(contentsOf: after)
        append(#","before":"#, to: &value)
        if let before { value.append(contentsOf: before) } else { append("null", to: &value) }
        append(#","input":{"offset":"#, to: &value)
        append(String(input.offset), to: &value)
        append(#","partition":"#, to: &value)
        append(String(input.partition), to: &value)
        append(#","topic":"#, to: &value)
        appendJSONString(input.topic, to: &value)
        append(#"},"input_offset":"#, to: &value)
        append(String(input.offset), to: &value)
        append(#","log_time":""#, to: &value)
        append(logTime.description, to: &value)
        append(#"","user_id":"#, to: &value)
        appendJSONString(userId, to: &value)
        append(#","v":1}"#, to: &value)
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(userId.utf8), value: value,
            headers: [KafkaHeader(kindHeader, Kind.change.rawValue)])
    }

    // MARK: Reading

    /// What one record of `<worker>.state` says.
    public enum Entry<State: Decodable & Sendable>: Sendable {
        case state(userId: String, inputOffset: Int64, state: State)
        case position(inputOffset: Int64, logTime: Timestamp)
        case marker(nonce: String)
        case cut(generation: Int, committedOffset: Int64)
    }

    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Decodes one record of `<worker>.state`.
    public static func entry<State: Decodable & Sendable>(
        of message: KafkaMessage, as _: State.Type
    ) throws(ReadError) -> Entry<State> {
        let kind = message.headers.first { $0.name == kindHeader }?.value.map { String(decoding: $0, as: UTF8.self) }
        guard let value = message.value else {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): changelog record has no value")
        }
        let decoder = JSONDecoder()
        do {
            switch kind.flatMap(Kind.init(rawValue:)) {
            case .state:
                let envelope = try decoder.decode(StateEnvelope<State>.self, from: Data(value))
                return .state(userId: envelope.user_id, inputOffset: envelope.input_offset, state: envelope.state)
            case .position:
                let envelope = try decoder.decode(PositionEnvelope.self, from: Data(value))
                guard let time = Timestamp(rfc3339: envelope.log_time) else {
                    throw ReadError(description: "bad log_time '\(envelope.log_time)'")
                }
                return .position(inputOffset: envelope.input_offset, logTime: time)
            case .marker:
                return .marker(nonce: try decoder.decode(MarkerEnvelope.self, from: Data(value)).nonce)
            case .cut:
                let envelope = try decoder.decode(CutEnvelope.self, from: Data(value))
                return .cut(generation: envelope.generation, committedOffset: envelope.committed_offset)
            case .change, nil:
                throw ReadError(description: "header \(kindHeader) is '\(kind ?? "missing")'")
            }
        } catch let error as ReadError {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): \(error.description)")
        } catch {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): \(error)")
        }
    }

    private struct StateEnvelope<State: Decodable>: Decodable {
        var input_offset: Int64
        var user_id: String
        var state: State
    }

    private struct PositionEnvelope: Decodable {
        var input_offset: Int64
        var log_time: String
    }

    private struct MarkerEnvelope: Decodable {
        var nonce: String
    }

    private struct CutEnvelope: Decodable {
        var generation: Int
        var committed_offset: Int64
    }

    // MARK: Bytes

    private static func append(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string literal, written by `CanonicalJSONEncoder` so the envelope escapes exactly
    /// as the state inside it does.
    static func appendJSONString(_ text: String, to bytes: inout [UInt8]) {
        do {
            try CanonicalJSONEncoder.encode(text, appendingTo: &bytes)
        } catch {
            // The encoder fails only on non-finite numbers and misused containers; never on a String.
            preconditionFailure("a String did not encode as JSON: \(error)")
        }
    }
}

/// How processor states become changelog bytes: canonical (sorted keys, the bytes JSONEncoder
/// would write, several times faster), so a re-run writes identical bytes and replay can compare
/// states byte for byte.
public enum StateCoding {
    public static func encode<State: Encodable>(_ state: State) throws -> [UInt8] {
        try CanonicalJSONEncoder.encode(state)
    }
}
