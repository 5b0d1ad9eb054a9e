/// Recorded against replayed records of one range, as sets keyed by (topic, key): "identical"
/// when every slot holds the same bytes on both sides, else each missing, extra and changed
/// record with both values.
///
/// Exact copies on one side (an at-least-once worker re-sends its uncommitted tail after a
/// crash) count once. Two different records in one slot on the recorded side break crash
/// equivalence on their own and are reported as conflicts; on the replayed side the first is
/// kept (the fold numbers ids uniquely, so this would be a processor bug) and also reported.
public struct ReplayComparison: Sendable {
    public enum Difference: Sendable, Hashable {
        /// Recorded, but the replay does not produce it.
        case missing(ComparedRecord)
        /// Produced by the replay, never recorded.
        case extra(ComparedRecord)
        case changed(recorded: ComparedRecord, replayed: ComparedRecord)
        /// One side holds two different records in one slot.
        case conflict(side: String, first: ComparedRecord, second: ComparedRecord)

        public var slot: ComparedRecord.Slot {
            switch self {
            case .missing(let record), .extra(let record): record.slot
            case .changed(let recorded, _): recorded.slot
            case .conflict(_, let first, _): first.slot
            }
        }
    }

    /// Records compared (distinct slots on either side).
    public private(set) var compared = 0
    /// Every difference, in (topic, key) order.
    public private(set) var differences: [Difference] = []

    public var isIdentical: Bool { differences.isEmpty }

    public init(recorded: [ComparedRecord], replayed: [ComparedRecord]) {
        var conflicts: [Difference] = []
        func index(_ records: [ComparedRecord], side: String) -> [ComparedRecord.Slot: ComparedRecord] {
            var bySlot: [ComparedRecord.Slot: ComparedRecord] = [:]
            for record in records {
                if let first = bySlot[record.slot] {
                    if first != record { conflicts.append(.conflict(side: side, first: first, second: record)) }
                } else {
                    bySlot[record.slot] = record
                }
            }
            return bySlot
        }
        let recordedSlots = index(recorded, side: "recorded")
        let replayedSlots = index(replayed, side: "replayed")
        var differences = conflicts
        let slots = Set(recordedSlots.keys).union(replayedSlots.keys)
        for slot in slots {
            switch (recordedSlots[slot], replayedSlots[slot]) {
            case (let old?, let new?): if !old.matches(new) { differences.append(.changed(recorded: old, replayed: new)) }
            case (let old?, nil): differences.append(.missing(old))
            case (nil, let new?): differences.append(.extra(new))
            case (nil, nil): break
            }
        }
        compared = slots.count
        self.differences = differences.sorted { $0.slot < $1.slot }
    }

    /// What `fleetctl replay` prints: `identical (N records)` or one block per difference.
    public func render() -> String {
        if isIdentical { return "identical (\(compared) records compared)" }
        var lines = ["\(differences.count) difference(s) in \(compared) records compared:"]
        for difference in differences {
            switch difference {
            case .missing(let record):
                lines.append("missing  \(record.slot): recorded but not produced by the replay")
                lines.append("  recorded: \(record.describe(against: nil))")
            case .extra(let record):
                lines.append("extra    \(record.slot): produced by the replay, never recorded")
                lines.append("  replayed: \(record.describe(against: nil))")
            case .changed(let recorded, let replayed):
                lines.append("changed  \(recorded.slot)")
                lines.append("  recorded: \(recorded.describe(against: replayed))")
                lines.append("  replayed: \(replayed.describe(against: recorded))")
            case .conflict(let side, let first, let second):
                lines.append("conflict \(first.slot): two different \(side) records")
                lines.append("  first:  \(first.describe(against: second))")
                lines.append("  second: \(second.describe(against: first))")
            }
        }
        return lines.joined(separator: "\n")
    }
}
