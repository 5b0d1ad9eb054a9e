import Foundation
public import FleetModel
public import Kafka
import StateImages
import SwiftProtobuf

/// `<worker>.history` in all the forms a fleet may hold (DESIGN.md principle 6):
///
/// - kind `image` (this build, binary images): one record per changed user per commit unit,
///   `fleet.state.HistoryImage`: the user's last image of the unit, the unit's first input
///   offset on the partition, the offsets at which the user changed in it and the log time after
///   the last of them. No before-image: the state before any input is the previous image plus a
///   deterministic re-fold of the log in between (`fleetctl replay`, `explain`).
/// - kind `change`, binary (`fleet.state.HistoryChange`, the build before per-unit history) or
///   JSON (builds before binary images, and `FLEET_STATE_IMAGES=json`): one record per state
///   change with the before- and the after-image.
///
/// `HistoryEntry` reads all three as one shape, so a history written across a rolling upgrade
/// reads as one: a per-input change is a unit of one input.
extension ChangelogRecords {
    /// The format version of the `HistoryImage` envelope this build writes.
    public static let historyImageFormat: UInt32 = 1

    /// The history record of a user changed in a commit unit: `after` is the user's image as of
    /// the last of `changed` (ascending input offsets, all at or after `unitStart`, the unit's
    /// first input offset on the partition), `logTime` the partition's log time after it.
    public static func historyImage(
        userId: String, after: [UInt8], unitStart: Int64, changed: [Int64], logTime: Timestamp, inputTopic: String,
        topic: String, partition: Int32
    ) -> ProducerRecord {
        // `Fleet_State_HistoryImage`, written directly (`ProtobufWireWriter`), as the state
        // record's envelope is.
        var envelope = ProtobufWireWriter(capacity: after.count + changed.count * 2 + inputTopic.utf8.count + 40)
        envelope.uint32(1, historyImageFormat)
        envelope.bytesField(2, after)
        envelope.int64(3, unitStart)
        envelope.packedUInt64(4, changed.lazy.map { UInt64($0 - unitStart) })
        envelope.sint64(5, logTime.millisecondsSinceEpoch)
        envelope.string(6, inputTopic)
        envelope.int32(7, partition)
        let value = envelope.bytes
        return ProducerRecord(
            topic: topic, partition: partition, key: Array(userId.utf8), value: value,
            headers: [KafkaHeader(kindHeader, Kind.image.rawValue)])
    }

    /// Which form a history record was written in.
    public enum HistoryForm: Sendable, Hashable {
        /// `HistoryImage` (kind `image`): one per changed user per commit unit.
        case unitImage
        /// `HistoryChange` (kind `change`, binary): one per state change, with its before-image.
        case binaryChange
        /// A JSON change (kind `change`): builds before binary images, or `FLEET_STATE_IMAGES=json`.
        case jsonChange
    }

    /// Where a history record belongs, without its images: enough to place it (restore rules,
    /// replay ranges, migration cuts) and to decide whether to decode it.
    public struct HistoryPlace: Sendable, Hashable {
        public var userId: String
        public var form: HistoryForm
        /// The folded log the offsets are of, and its partition.
        public var inputTopic: String
        public var inputPartition: Int32
        /// The first input offset of the unit (a change record: its input's offset).
        public var unitStart: Int64
        /// The offsets at which the user changed, ascending, never empty.
        public var changed: [Int64]

        public init(userId: String, form: HistoryForm, inputTopic: String, inputPartition: Int32, unitStart: Int64, changed: [Int64]) {
            self.userId = userId; self.form = form; self.inputTopic = inputTopic; self.inputPartition = inputPartition
            self.unitStart = unitStart; self.changed = changed
        }

        /// The input offset the record's after-image is as of.
        public var lastOffset: Int64 { changed.last ?? unitStart }
        /// The input the after-image is as of.
        public var input: SourceCoordinates { SourceCoordinates(topic: inputTopic, partition: inputPartition, offset: lastOffset) }
    }

    /// One history record decoded, in any form.
    public struct HistoryEntry<State: Sendable>: Sendable {
        public var place: HistoryPlace
        public var after: State
        /// The state before the input, for a change record (`nil` inside: the user was not
        /// stored); absent (outer nil) for a unit image, which has none.
        public var before: State??
        /// The partition's log time after `place.lastOffset`.
        public var logTime: Timestamp

        public var userId: String { place.userId }
    }

    /// The place of a history record of any form.
    public static func historyPlace(of message: KafkaMessage) throws(ReadError) -> HistoryPlace {
        let where_ = "\(message.topicPartition)@\(message.offset)"
        switch kindOf(message) {
        case Kind.image.rawValue?:
            let envelope = try imageEnvelope(of: message)
            return try place(of: envelope, message: message)
        case Kind.change.rawValue?:
            let found = try changePlace(of: message)
            let form: HistoryForm = message.value?.first == UInt8(ascii: "{") ? .jsonChange : .binaryChange
            return HistoryPlace(
                userId: found.userId, form: form, inputTopic: found.input.topic, inputPartition: found.input.partition,
                unitStart: found.input.offset, changed: [found.input.offset])
        case let other:
            throw ReadError(description: "\(where_): header \(kindHeader) is '\(other ?? "missing")', not a history record")
        }
    }

    /// Decodes a history record of any form.
    public static func historyEntry<State: Decodable & Sendable>(
        of message: KafkaMessage, as _: State.Type
    ) throws(ReadError) -> HistoryEntry<State> {
        guard kindOf(message) == Kind.image.rawValue else {
            let change = try change(of: message, as: State.self)
            let form: HistoryForm = message.value?.first == UInt8(ascii: "{") ? .jsonChange : .binaryChange
            return HistoryEntry(
                place: HistoryPlace(
                    userId: change.userId, form: form, inputTopic: change.input.topic, inputPartition: change.input.partition,
                    unitStart: change.input.offset, changed: [change.input.offset]),
                after: change.after, before: .some(change.before), logTime: change.logTime)
        }
        let envelope = try imageEnvelope(of: message)
        let place = try place(of: envelope, message: message)
        do {
            return HistoryEntry(
                place: place, after: try StateCoding.decode([UInt8](envelope.after), as: State.self), before: nil,
                logTime: Timestamp(millisecondsSinceEpoch: envelope.logTime))
        } catch {
            throw ReadError(description: "\(message.topicPartition)@\(message.offset): history image does not decode as this worker's state: \(error)")
        }
    }

    private static func kindOf(_ message: KafkaMessage) -> String? {
        message.headers.first { $0.name == kindHeader }?.value.map { String(decoding: $0, as: UTF8.self) }
    }

    private static func imageEnvelope(of message: KafkaMessage) throws(ReadError) -> Fleet_State_HistoryImage {
        let where_ = "\(message.topicPartition)@\(message.offset)"
        guard let value = message.value else { throw ReadError(description: "\(where_): history record has no value") }
        do {
            let envelope = try Fleet_State_HistoryImage(serializedBytes: value)
            try StateImageFormat.check(envelope.format, reads: historyImageFormat, of: "history image envelope")
            return envelope
        } catch {
            throw ReadError(description: "\(where_): history image does not decode: \(error)")
        }
    }

    private static func place(of envelope: Fleet_State_HistoryImage, message: KafkaMessage) throws(ReadError) -> HistoryPlace {
        let where_ = "\(message.topicPartition)@\(message.offset)"
        guard let key = message.key else { throw ReadError(description: "\(where_): history image has no key (user id)") }
        var changed: [Int64] = []
        changed.reserveCapacity(envelope.changed.count)
        var previous = Int64.min
        for distance in envelope.changed {
            guard let step = Int64(exactly: distance), envelope.unitStart <= Int64.max - step, envelope.unitStart + step > previous
            else { throw ReadError(description: "\(where_): history image's changed offsets are not ascending from the unit start") }
            previous = envelope.unitStart + step
            changed.append(previous)
        }
        guard !changed.isEmpty else { throw ReadError(description: "\(where_): history image names no changed offset") }
        return HistoryPlace(
            userId: String(decoding: key, as: UTF8.self), form: .unitImage, inputTopic: envelope.inputTopic,
            inputPartition: envelope.inputPartition, unitStart: envelope.unitStart, changed: changed)
    }
}
