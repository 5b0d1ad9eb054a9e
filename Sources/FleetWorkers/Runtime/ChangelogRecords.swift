import Foundation
public import FleetModel
public import Kafka
import StateImages
import SwiftProtobuf

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
/// `<worker>.history` holds, for replay and explain, one `image` record per changed user per
/// commit unit (`historyImage`, see ChangelogRecords+History.swift); builds before per-unit
/// history wrote `change` records (a user's state before and after one input record), which
/// every reader here still reads, and `FLEET_STATE_IMAGES=json` still writes.
///
/// State records are binary (`fleet.state.ChangelogState` of Protos/fleet_state.proto, with its
/// format version, holding the state's image from `StateCoding`), as are history images and the
/// change records of the build before per-unit history; the key is the user id. Versions before binary images wrote them as JSON
/// envelopes (first byte `{`), which every reader here still reads, so a fleet whose changelog
/// holds JSON images restores them and writes binary from then on (a rolling upgrade). Position,
/// marker and cut records stay small JSON documents: one per partition and unit at most.
public enum ChangelogRecords {
    public static let kindHeader = "fleet-record"

    public enum Kind: String, Sendable {
        case state, position, marker, change, cut, image
    }

    public static let positionKey = "#position"
    public static let markerKey = "#restore"
    public static let cutKey = "#cut"
    /// The input offset of state and position records a migration re-keyed into a new generation.
    public static let migratedInputOffset: Int64 = -1

    // MARK: Writing

    /// The format version of the state and change envelopes this build writes.
    public static let envelopeFormat: UInt32 = 1

    /// What a state record says about its state's next wake-up.
    public enum WakeUp: Hashable, Sendable {
        /// Not said (records of builds before lazy restore, a migration's re-keyed states):
        /// restore decodes the image to learn it.
        case unrecorded
        /// `UserProcessor.nextWakeUp` of the state the image holds (nil: none): restore schedules
        /// the timer from it and leaves the image undecoded until the user is touched.
        case recorded(Timestamp?)
    }

    /// A user's state image (`StateCoding.encode`) as of the input record at `inputOffset`,
    /// with the state's next wake-up when the writer knows it (the fold does).
    /// A JSON image (a state without a binary image, or `FLEET_STATE_IMAGES=json`) goes in the
    /// JSON envelope of the builds before binary images, so they can read it; it records no
    /// wake-up.
    public static func state(
        userId: String, image: [UInt8], inputOffset: Int64, wakeUp: WakeUp = .unrecorded, topic: String, partition: Int32
    ) -> ProducerRecord {
        if image.first == UInt8(ascii: "{") {
            return legacyJSONState(userId: userId, stateJSON: image, inputOffset: inputOffset, topic: topic, partition: partition)
        }
        // `Fleet_State_ChangelogState`, written directly (`ProtobufWireWriter`): a copy of the
        // image into the message and back out of it cost as much as the envelope's fields.
        var envelope = ProtobufWireWriter(capacity: image.count + 32)
        envelope.uint32(1, envelopeFormat)
        envelope.int64(2, inputOffset)
        envelope.bytesField(3, image)
        if case .recorded(let due) = wakeUp {
            // Fields older readers skip as unknown: the envelope's format stays 1, so a build
            // before lazy restore still restores these records during a rolling upgrade.
            envelope.optionalInt64(4, due?.millisecondsSinceEpoch)
            envelope.bool(5, true)
        }
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(userId.utf8), value: envelope.bytes,
            headers: [KafkaHeader(kindHeader, Kind.state.rawValue)])
    }

    /// A state record as versions before binary images wrote it (a JSON envelope around the
    /// state's canonical JSON): for tests of the rolling upgrade and the image corpus.
    public static func legacyJSONState(
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

    /// The partition's log time as of the input record at `inputOffset`, and how many users had a
    /// state in the partition then (`users`, nil when unknown): a restore reads the last one first
    /// to size its tables (`StateRestorer`), since the changelog's offsets say nothing of how many
    /// users it holds once compaction removed records.
    public static func position(
        logTime: Timestamp, inputOffset: Int64, users: Int? = nil, topic: String, partition: Int32
    ) -> ProducerRecord {
        let value = users.map { #"{"input_offset":\#(inputOffset),"log_time":"\#(logTime)","users":\#($0),"v":1}"# }
            ?? #"{"input_offset":\#(inputOffset),"log_time":"\#(logTime)","v":1}"#
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

    /// One state change for `<worker>.history`: images from `StateCoding.encode`; `before` is
    /// nil for a user never stored. JSON images go in the JSON envelope of the builds before
    /// binary images, as in `state`.
    public static func change(
        userId: String, before: [UInt8]?, after: [UInt8], input: SourceCoordinates, logTime: Timestamp,
        topic: String, partition: Int32
    ) -> ProducerRecord {
        if after.first == UInt8(ascii: "{") {
            return legacyJSONChange(
                userId: userId, before: before, after: after, input: input, logTime: logTime, topic: topic, partition: partition)
        }
        var envelope = Fleet_State_HistoryChange()
        envelope.format = envelopeFormat
        if let before { envelope.before = Data(before) }
        envelope.after = Data(after)
        envelope.inputTopic = input.topic
        envelope.inputPartition = input.partition
        envelope.inputOffset = input.offset
        envelope.logTime = logTime.millisecondsSinceEpoch
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(userId.utf8), value: serialized(envelope),
            headers: [KafkaHeader(kindHeader, Kind.change.rawValue)])
    }

    /// A change record as versions before binary images wrote it (JSON, before and after as
    /// canonical JSON): for tests of the rolling upgrade and the image corpus.
    public static func legacyJSONChange(
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

    private static func serialized(_ message: some SwiftProtobuf.Message) -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            // The envelopes hold only scalars and bytes; encoding them cannot fail.
            preconditionFailure("a changelog envelope did not encode: \(error)")
        }
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

    /// What a record of `<worker>.state` other than a user's state says.
    public enum ControlEntry: Sendable {
        /// `users`: the partition's users as of the position, when its writer recorded them.
        case position(inputOffset: Int64, logTime: Timestamp, users: Int?)
        case marker(nonce: String)
        case cut(generation: Int, committedOffset: Int64)
    }

    /// Decodes one record of `<worker>.state` that is not a state record (a state record, or one
    /// with no kind, is an error here): what a restore reads in full, whatever the state's type.
    public static func controlEntry(of message: KafkaMessage) throws(ReadError) -> ControlEntry {
        let kind = message.headers.first { $0.name == kindHeader }?.value.map { String(decoding: $0, as: UTF8.self) }
        guard let value = message.value else {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): changelog record has no value")
        }
        let decoder = JSONDecoder()
        do {
            switch kind.flatMap(Kind.init(rawValue:)) {
            case .position:
                let envelope = try decoder.decode(PositionEnvelope.self, from: Data(value))
                guard let time = Timestamp(rfc3339: envelope.log_time) else {
                    throw ReadError(description: "bad log_time '\(envelope.log_time)'")
                }
                return .position(inputOffset: envelope.input_offset, logTime: time, users: envelope.users)
            case .marker:
                return .marker(nonce: try decoder.decode(MarkerEnvelope.self, from: Data(value)).nonce)
            case .cut:
                let envelope = try decoder.decode(CutEnvelope.self, from: Data(value))
                return .cut(generation: envelope.generation, committedOffset: envelope.committed_offset)
            case .state, .change, .image, nil:
                throw ReadError(description: "header \(kindHeader) is '\(kind ?? "missing")'")
            }
        } catch let error as ReadError {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): \(error.description)")
        } catch {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): \(error)")
        }
    }

    /// Decodes one record of `<worker>.state`.
    public static func entry<State: Decodable & Sendable>(
        of message: KafkaMessage, as _: State.Type
    ) throws(ReadError) -> Entry<State> {
        guard message.header(kindHeader).map({ $0.elementsEqual(stateKindBytes) }) == true else {
            switch try controlEntry(of: message) {
            case .position(let inputOffset, let logTime, _): return .position(inputOffset: inputOffset, logTime: logTime)
            case .marker(let nonce): return .marker(nonce: nonce)
            case .cut(let generation, let committedOffset): return .cut(generation: generation, committedOffset: committedOffset)
            }
        }
        let image = try stateImage(of: message)
        do {
            return .state(userId: image.userId, inputOffset: image.inputOffset, state: try state(of: image, as: State.self))
        } catch {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): \(error)")
        }
    }

    /// A state record with its image not yet decoded: restore reads every record this far and
    /// decodes only each user's last committed image (superseded ones are never decoded).
    public struct StateImage: Sendable {
        public var userId: String
        public var inputOffset: Int64
        /// The state's image; for a record of a version before binary images (`isJSONEnvelope`),
        /// the whole JSON envelope, decoded with the state's own type by `state(of:as:)`:
        /// passing it through a generic JSON tree would round 64-bit hashes to doubles.
        public var image: [UInt8]
        public var isJSONEnvelope: Bool
    }

    /// The user, input offset and undecoded image of a state record (binary or JSON envelope).
    public static func stateImage(of message: KafkaMessage) throws(ReadError) -> StateImage {
        guard let value = message.value else {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): state record has no value")
        }
        if value.first == UInt8(ascii: "{") {
            struct Place: Decodable { var input_offset: Int64; var user_id: String }
            guard let place = try? JSONDecoder().decode(Place.self, from: Data(value)) else {
                throw ReadError(description: "\(message.topicPartition)@\(message.offset): JSON state record lacks user_id or input_offset")
            }
            return StateImage(userId: place.user_id, inputOffset: place.input_offset, image: value, isJSONEnvelope: true)
        }
        guard let key = message.key else {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): state record has no key (user id)")
        }
        let envelope: Fleet_State_ChangelogState
        do {
            envelope = try Fleet_State_ChangelogState(serializedBytes: value)
            try checkEnvelope(envelope.format)
        } catch {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): state record does not decode: \(error)")
        }
        return StateImage(
            userId: String(decoding: key, as: UTF8.self), inputOffset: envelope.inputOffset, image: [UInt8](envelope.state),
            isJSONEnvelope: false)
    }

    /// The state of a `stateImage(of:)`.
    public static func state<State: Decodable>(of image: StateImage, as _: State.Type) throws(StateImageError) -> State {
        guard image.isJSONEnvelope else { return try StateCoding.decode(image.image, as: State.self) }
        do {
            return try JSONDecoder().decode(StateEnvelope<State>.self, from: Data(image.image)).state
        } catch {
            throw StateImageError("JSON state record (\(image.image.count) bytes) does not decode: \(error)")
        }
    }

    private struct StateEnvelope<State: Decodable>: Decodable {
        var state: State
    }

    /// One `<worker>.history` record decoded: the user's state before and after the input record
    /// at `input`, and the partition's log time after it.
    public struct Change<State: Sendable>: Sendable {
        public var userId: String
        public var before: State?
        public var after: State
        public var input: SourceCoordinates
        public var logTime: Timestamp
    }

    /// Where a history record belongs (user, input coordinates) without decoding its states.
    public static func changePlace(of message: KafkaMessage) throws(ReadError) -> (userId: String, input: SourceCoordinates) {
        let place = "\(message.topicPartition)@\(message.offset)"
        guard let value = message.value else { throw ReadError(description: "\(place): history record has no value") }
        if value.first == UInt8(ascii: "{") {
            struct Place: Decodable { var user_id: String; var input: SourceCoordinates }
            guard let found = try? JSONDecoder().decode(Place.self, from: Data(value)) else {
                throw ReadError(description: "\(place): JSON history record lacks user_id or input")
            }
            return (found.user_id, found.input)
        }
        guard let key = message.key, let envelope = try? Fleet_State_HistoryChange(serializedBytes: value),
              (try? checkEnvelope(envelope.format)) != nil
        else { throw ReadError(description: "\(place): history record does not decode") }
        return (
            String(decoding: key, as: UTF8.self),
            SourceCoordinates(topic: envelope.inputTopic, partition: envelope.inputPartition, offset: envelope.inputOffset))
    }

    /// Decodes one `<worker>.history` record, binary or JSON (versions before binary images).
    public static func change<State: Decodable & Sendable>(of message: KafkaMessage, as _: State.Type) throws(ReadError) -> Change<State> {
        let place = "\(message.topicPartition)@\(message.offset)"
        let kind = message.headers.first { $0.name == kindHeader }?.value.map { String(decoding: $0, as: UTF8.self) }
        guard kind == Kind.change.rawValue else {
            throw ReadError(description: "\(place): header \(kindHeader) is '\(kind ?? "missing")', not a history change")
        }
        guard let value = message.value else { throw ReadError(description: "\(place): history record has no value") }
        do {
            if value.first == UInt8(ascii: "{") {
                let envelope = try JSONDecoder().decode(LegacyChange<State>.self, from: Data(value))
                guard let time = Timestamp(rfc3339: envelope.log_time) else {
                    throw ReadError(description: "bad log_time '\(envelope.log_time)'")
                }
                return Change(userId: envelope.user_id, before: envelope.before, after: envelope.after, input: envelope.input, logTime: time)
            }
            guard let key = message.key else { throw ReadError(description: "history record has no key (user id)") }
            let envelope = try Fleet_State_HistoryChange(serializedBytes: value)
            try checkEnvelope(envelope.format)
            return Change(
                userId: String(decoding: key, as: UTF8.self),
                before: envelope.hasBefore ? try StateCoding.decode([UInt8](envelope.before), as: State.self) : nil,
                after: try StateCoding.decode([UInt8](envelope.after), as: State.self),
                input: SourceCoordinates(topic: envelope.inputTopic, partition: envelope.inputPartition, offset: envelope.inputOffset),
                logTime: Timestamp(millisecondsSinceEpoch: envelope.logTime))
        } catch let error as ReadError {
            throw ReadError(description: "\(place): \(error.description)")
        } catch {
            throw ReadError(description: "\(place): history record does not decode as this worker's state: \(error)")
        }
    }

    /// Decoded with the state's own type, never through a generic JSON tree (64-bit hashes).
    private struct LegacyChange<State: Decodable>: Decodable {
        var user_id: String
        var before: State?
        var after: State
        var input: SourceCoordinates
        var log_time: String
    }

    private static func checkEnvelope(_ format: UInt32) throws(StateImageError) {
        try StateImageFormat.check(format, reads: envelopeFormat, of: "changelog envelope")
    }

    private struct PositionEnvelope: Decodable {
        var input_offset: Int64
        var log_time: String
        /// Absent in records of builds before it, and in a migration's.
        var users: Int?
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

/// How a worker writes state images (`FLEET_STATE_IMAGES`).
public enum StateImageEncoding: String, Sendable, Hashable {
    /// Versioned protobuf, for states that have one (`BinaryStateImage`); canonical JSON otherwise.
    case binary
    /// Canonical JSON in JSON envelopes, byte for byte what builds before binary images wrote:
    /// while a rollback to such a build may still be needed, it must be able to restore.
    case json
}

/// How processor states become changelog and history images, and back.
///
/// A state with a binary image (`BinaryStateImage`: every shipped worker's) is written binary;
/// any other (test processors) as canonical JSON (sorted keys, the bytes JSONEncoder would
/// write). Either way equal states give equal bytes, so a re-run writes identical images and
/// replay compares them byte for byte. Reading tells the two apart by the first byte: `{`
/// starts a JSON image (also every image written before binary images), a binary image starts
/// with its format version's tag (`0x08`).
public enum StateCoding {
    public static func encode<State: Encodable>(_ state: State, as encoding: StateImageEncoding = .binary) throws -> [UInt8] {
        if encoding == .binary, let binary = State.self as? any BinaryStateImage.Type {
            return try binary.binaryImage(ofSameType: state)
        }
        return try CanonicalJSONEncoder.encode(state)
    }

    /// An upper bound on the size of `encode(state, as: encoding)` that costs no encoding, or nil
    /// when there is none (JSON images, states without `BinaryStateImage.binaryImageSizeBound()`).
    public static func imageSizeBound<State>(of state: State, as encoding: StateImageEncoding = .binary) -> Int? {
        guard encoding == .binary, let binary = State.self as? any BinaryStateImage.Type else { return nil }
        return binary.binaryImageSizeBound(ofSameType: state)
    }

    /// Decodes an image of either kind; throws `StateImageError` naming the problem, never
    /// traps, on bytes that are neither.
    public static func decode<State: Decodable>(_ image: [UInt8], as _: State.Type) throws(StateImageError) -> State {
        if image.first == UInt8(ascii: "{") {
            do {
                return try JSONDecoder().decode(State.self, from: Data(image))
            } catch {
                throw StateImageError("JSON state image (\(image.count) bytes) does not decode: \(error)")
            }
        }
        guard let binary = State.self as? any BinaryStateImage.Type else {
            throw StateImageError("state image (\(image.count) bytes) is not JSON, and \(State.self) has no binary image")
        }
        guard let state = try binary.init(binaryImage: image) as? State else {
            throw StateImageError("a binary image of \(State.self) decoded as another type")
        }
        return state
    }

    /// The state as canonical JSON, for people (`fleetctl`, explain): whatever the changelog
    /// holds, operators read states as JSON.
    public static func json<State: Encodable>(_ state: State) throws -> [UInt8] {
        try CanonicalJSONEncoder.encode(state)
    }
}

extension BinaryStateImage {
    /// `binaryImage()` of `state`, a value of this very type reached through a generic
    /// (`StateCoding`, after `State.self as? any BinaryStateImage.Type`), read where it lies.
    /// Casting the value instead (`state as? any BinaryStateImage`) copied a whole state into a
    /// heap box, a retain per collection it holds, at every step and every seal.
    fileprivate static func binaryImage<State>(ofSameType state: borrowing State) throws(StateImageError) -> [UInt8] {
        precondition(State.self == Self.self, "\(State.self) read as \(Self.self)")
        return try withUnsafePointer(to: state) { (pointer) throws(StateImageError) -> [UInt8] in
            try UnsafeRawPointer(pointer).assumingMemoryBound(to: Self.self).pointee.binaryImage()
        }
    }

    /// `binaryImageSizeBound()` of `state`, a value of this very type, read where it lies (as
    /// `binaryImage(ofSameType:)`).
    fileprivate static func binaryImageSizeBound<State>(ofSameType state: borrowing State) -> Int? {
        precondition(State.self == Self.self, "\(State.self) read as \(Self.self)")
        return withUnsafePointer(to: state) { pointer in
            UnsafeRawPointer(pointer).assumingMemoryBound(to: Self.self).pointee.binaryImageSizeBound()
        }
    }
}
