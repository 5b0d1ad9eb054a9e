import Foundation
public import FleetModel
import FleetWorkers
public import Kafka

/// The pure part of a partition migration: from the previous generation's changelog and
/// history, what the new generation's changelog and history must hold.
///
/// The old fold of partition `p` stopped at its first cut's committed offset `c`. So, exactly
/// as a restore would (`StateRestorer`), a user's state is the last state record of the user
/// whose input offset is below `c`, and the partition's log time the last such position record.
/// Users move to the partition murmur2 gives them under the new count, with input offset -1
/// (valid before any input of the new generation). Every new partition starts at the latest log
/// time of any old partition: log time never goes backwards for any user, and no timer a user
/// had is lost (the timers are rebuilt from the states' wake-ups).
public enum StateRekeying {
    /// The first cut for `generation` per partition of the old changelog.
    public static func cuts(in changelog: [KafkaMessage], generation: Int) -> [Int32: Int64] {
        var cuts: [Int32: Int64] = [:]
        for message in changelog.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) })
        where kind(of: message) == ChangelogRecords.Kind.cut.rawValue && cuts[message.partition] == nil {
            if case .cut(let cutGeneration, let offset)? = try? ChangelogRecords.entry(of: message, as: Ignored.self),
               cutGeneration == generation {
                cuts[message.partition] = offset
            }
        }
        return cuts
    }

    /// What the old changelog says every user's committed state is at the cuts, and the latest
    /// log time of any partition: each partition read under the restore rule
    /// (`StateRestorer.Builder`) with its cut as the committed offset.
    public static func committedStates<State: Codable & Hashable & Sendable>(
        in changelog: [KafkaMessage], cuts: [Int32: Int64], as _: State.Type
    ) throws -> (states: [String: State], logTime: Timestamp?) {
        var committed = CommittedImages<State>(cuts: cuts)
        for message in changelog.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
            try committed.add(message)
        }
        var states: [String: State] = [:]
        for user in committed.users {
            states[user] = try committed.state(of: user)
        }
        return (states, committed.logTime)
    }

    /// Every user's committed image at the cuts, read one changelog record at a time (in offset
    /// order within each partition; partitions may interleave), as a restore reads them
    /// (`ChangelogImages`): a migration streams the old changelog and holds each
    /// user's image bytes, not the records nor decoded states.
    ///
    /// An image recorded with its wake-up moves to the new changelog as it is, wake-up
    /// included, so the new generation restores it without decoding it; any other (JSON
    /// envelopes, images of builds before lazy restore) is decoded and written again, one user at
    /// a time.
    public struct CommittedImages<State: Codable & Hashable & Sendable>: Sendable {
        public let cuts: [Int32: Int64]
        private var partitions: [Int32: ChangelogImages] = [:]

        public init(cuts: [Int32: Int64]) { self.cuts = cuts }

        public mutating func add(_ message: KafkaMessage) throws {
            guard let cut = cuts[message.partition] else {
                throw RekeyError(description: "partition \(message.partition) of \(message.topic) has no cut")
            }
            try partitions[message.partition, default: ChangelogImages(committed: cut, decoding: State.self)].read(message)
        }

        /// Every user with a committed state, in id order, so a repeated re-key writes the same
        /// records in the same order.
        public var users: [String] {
            var users = Set<String>()
            for partition in partitions.values {
                users.formUnion(partition.held.keys)
                users.formUnion(partition.images.keys)
            }
            return users.sorted()
        }

        /// The latest log time of any partition: log time never goes backwards, and every new
        /// partition starts from it.
        public var logTime: Timestamp? { partitions.values.compactMap(\.logTime).max() }

        /// The user's committed state, decoded.
        public func state(of user: String) throws -> State? {
            for (partition, collector) in partitions {
                do {
                    if let held = collector.held[user] { return try StateCoding.decode(held.image, as: State.self) }
                    if let kept = collector.images[user] { return try kept.state(as: State.self) }
                } catch {
                    throw RekeyError(description: "partition \(partition): the state of user \(RecordError.quote(user)) does not decode: \(error)")
                }
            }
            return nil
        }

        /// The user's record of the new changelog, on the user's new partition at input offset
        /// -1 (nil: no committed state).
        public func changelogRecord(of user: String, partitions count: Int, topic physical: String) throws -> ProducerRecord? {
            for collector in partitions.values {
                if let held = collector.held[user] {
                    return ChangelogRecords.state(
                        userId: user, image: held.image, inputOffset: ChangelogRecords.migratedInputOffset, wakeUp: .recorded(held.wakeUp),
                        topic: physical, partition: KeyPartitioner.partition(forKey: user, partitions: count))
                }
            }
            guard let state = try state(of: user) else { return nil }
            return try StateRekeying.changelogRecord(user: user, state: state, partitions: count, topic: physical)
        }
    }

    /// Whether `message` is a cut record (the only kind `cuts(in:generation:)` reads).
    public static func isCut(_ message: KafkaMessage) -> Bool { kind(of: message) == ChangelogRecords.Kind.cut.rawValue }

    /// The new generation's changelog records: one state per user on its new partition, and a
    /// position per new partition, all at input offset -1. Users in id order, so a repeated
    /// migration step writes the same records in the same order.
    public static func changelogRecords<State: Encodable>(
        states: [String: State], logTime: Timestamp?, partitions: Int, topic physical: String
    ) throws -> [ProducerRecord] {
        var records: [ProducerRecord] = []
        for user in states.keys.sorted() {
            guard let state = states[user] else { continue }
            records.append(try changelogRecord(user: user, state: state, partitions: partitions, topic: physical))
        }
        return records + positionRecords(logTime: logTime, partitions: partitions, topic: physical)
    }

    /// One user's record of the new changelog: the state on the user's new partition.
    public static func changelogRecord<State: Encodable>(
        user: String, state: State, partitions: Int, topic physical: String
    ) throws -> ProducerRecord {
        ChangelogRecords.state(
            userId: user, image: try StateCoding.encode(state), inputOffset: ChangelogRecords.migratedInputOffset,
            topic: physical, partition: KeyPartitioner.partition(forKey: user, partitions: partitions))
    }

    /// The new changelog's position records: the log time on every new partition (none when
    /// no old partition had one).
    public static func positionRecords(logTime: Timestamp?, partitions: Int, topic physical: String) -> [ProducerRecord] {
        guard let logTime else { return [] }
        return (0..<Int32(partitions)).map { partition in
            ChangelogRecords.position(
                logTime: logTime, inputOffset: ChangelogRecords.migratedInputOffset, topic: physical, partition: partition)
        }
    }

    /// The header naming where a copied history record came from (`topic:partition:offset`,
    /// logical), so a resumed copy skips what an interrupted one already wrote.
    public static let copiedFromHeader = "fleet-copied-from"

    /// Copies of the old history's records, keyed by user onto the new partitions, except those
    /// of attempts past the cut (never committed) and those already copied.
    public static func historyCopies(
        of history: [KafkaMessage], cuts: [Int32: Int64],
        alreadyCopied: Set<String>, partitions: Int, topic physical: String
    ) -> [ProducerRecord] {
        var copies: [ProducerRecord] = []
        for message in history.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
            let origin = "\(message.topic):\(message.partition):\(message.offset)"
            guard !alreadyCopied.contains(origin), let key = message.key, let value = message.value else { continue }
            // History partition p holds the changes of log partition p (co-partitioned). A record
            // (a per-input change, or a per-unit image as of its last changed input) at or past
            // the cut was written by an attempt that never committed: units commit whole.
            if let inputOffset = try? ChangelogRecords.historyPlace(of: message).lastOffset, let cut = cuts[message.partition], inputOffset >= cut {
                continue
            }
            copies.append(ProducerRecord(
                topic: physical, partition: KeyPartitioner.partition(forKey: key, partitions: Int32(partitions)),
                key: key, value: value, headers: message.headers + [KafkaHeader(copiedFromHeader, origin)],
                timestamp: message.timestamp))
        }
        return copies
    }

    /// Origins of the history copies already in the new history.
    public static func copiedOrigins(in history: [KafkaMessage]) -> Set<String> {
        Set(history.compactMap { $0.header(copiedFromHeader).map { String(decoding: $0, as: UTF8.self) } })
    }

    public struct RekeyError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    private static func kind(of message: KafkaMessage) -> String? {
        message.header(ChangelogRecords.kindHeader).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A state type for reading records whose state is not needed (cuts).
    private struct Ignored: Codable, Sendable {}
}
