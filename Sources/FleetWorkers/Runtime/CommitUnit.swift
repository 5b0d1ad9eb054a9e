import FleetModel
import Kafka

/// The open commit unit's ingest part (DESIGN.md principle 4): the forwards, carried records,
/// ticks and dead letters in the order produced, and the next input offset per ingest or
/// carried partition. Each folded partition's part (outputs, changed states, history images,
/// position) is held by its lane (`PartitionLane`) until the unit is sealed; the commit
/// produces both together.
///
/// Under exactly-once the whole unit is one transaction; under at-least-once its records are
/// produced and acknowledged before its offsets are committed. Either way a crash leaves the
/// unit's inputs to be processed again from the committed offsets and the committed state.
struct CommitUnit: Sendable {
    /// Forwards, ticks and dead letters, in production order.
    private(set) var records: [ProducerRecord] = []
    /// For each of `records`, the input that caused it (nil for ticks): when the broker refuses
    /// one record, the runtime knows which input to blame (`FoldCore`'s quarantine).
    private(set) var causes: [InputPosition?] = []
    /// The next offset to read per consumed ingest or carried partition (physical names).
    var offsets: [TopicPartition: Int64] = [:]
    /// When the first work of the unit arrived (here or in a lane); nil while empty.
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
    mutating func drop(_ partitions: Set<TopicPartition>) {
        for partition in partitions { offsets[partition] = nil }
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
