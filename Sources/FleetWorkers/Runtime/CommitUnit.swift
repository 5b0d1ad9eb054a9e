import FleetModel
import Kafka

/// Everything processed since the last commit, committed together (DESIGN.md principle 4):
/// the outputs, forwards, ticks and dead letters in the order produced, the latest state of each
/// changed user (its changelog record and its history image), the partitions' log-time
/// positions, and the next input offset per partition.
///
/// Under exactly-once the whole unit is one transaction; under at-least-once its records are
/// produced and acknowledged before its offsets are committed. Either way a crash leaves the
/// unit's inputs to be processed again from the committed offsets and the committed state.
struct CommitUnit<State: Sendable>: Sendable {
    /// Outputs, forwards, ticks, history and dead letters, in production order.
    private(set) var records: [ProducerRecord] = []
    /// For each of `records`, the input that caused it (nil for ticks): when the broker refuses
    /// one record, the runtime knows which input to blame (`FoldCore`'s quarantine).
    private(set) var causes: [InputPosition?] = []
    /// Per folded partition, the latest state of each user changed in this unit and the input
    /// offset it reflects, and the state's next wake-up (recorded beside the image, for lazy
    /// restore). One changelog record per user per unit: the changelog is compacted, so only
    /// the last one would survive anyway.
    var states: [Int32: [String: (state: State, inputOffset: Int64, wakeUp: Timestamp?)]] = [:]
    /// Per folded partition, the first input offset folded in this unit: the `unit_start` of its
    /// history images.
    var unitStarts: [Int32: Int64] = [:]
    /// Per folded partition and changed user, the input offsets that changed the user in this
    /// unit and the log time after the last: with `states`, the user's history image.
    var changes: [Int32: [String: UnitChanges]] = [:]
    /// Per folded partition, the log time after the unit's last folded record, and how many users had a
    /// state then (the position record carries it, to size a later restore).
    var positions: [Int32: (inputOffset: Int64, logTime: Timestamp, users: Int)] = [:]
    /// The next offset to read per consumed partition (physical names).
    var offsets: [TopicPartition: Int64] = [:]
    /// When the first work of the unit arrived; nil while empty.
    var openedAt: ContinuousClock.Instant?

    var isEmpty: Bool { offsets.isEmpty && records.isEmpty }

    mutating func append(_ record: ProducerRecord, cause: InputPosition?) {
        records.append(record)
        causes.append(cause)
    }

    mutating func touch(at now: ContinuousClock.Instant) {
        if openedAt == nil { openedAt = now }
    }

    /// Forgets everything about `partitions` (they were lost; their work will be redone).
    mutating func drop(_ partitions: Set<TopicPartition>, foldedTopic: String) {
        for partition in partitions {
            offsets[partition] = nil
            if partition.topic == foldedTopic {
                states[partition.partition] = nil
                unitStarts[partition.partition] = nil
                changes[partition.partition] = nil
                positions[partition.partition] = nil
            }
        }
    }
}

/// Where one user changed within a commit unit.
struct UnitChanges: Sendable {
    /// Input offsets, ascending, each once.
    var offsets: [Int64] = []
    /// The partition's log time after the last of `offsets`.
    var logTime: Timestamp

    mutating func record(_ offset: Int64, logTime time: Timestamp) {
        if offsets.last != offset { offsets.append(offset) }
        logTime = time
    }
}

/// One consumed record: its partition (physical topic name) and offset.
struct InputPosition: Hashable, Sendable, CustomStringConvertible {
    var partition: TopicPartition
    var offset: Int64

    var description: String { "\(partition)@\(offset)" }
}
