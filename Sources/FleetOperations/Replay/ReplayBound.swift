public import FleetModel

/// One end of a replay or export range as the operator writes it (`--from`, `--to`): a log
/// offset of the worker's folded partition, or an RFC 3339 time.
public enum ReplayBound: Hashable, Sendable, CustomStringConvertible {
    case offset(Int64)
    case time(Timestamp)

    /// Parses `--from`/`--to`: a non-negative integer is an offset, anything else must be an
    /// RFC 3339 time.
    public init(parsing text: String) throws(ReplayError) {
        if let offset = Int64(text) {
            guard offset >= 0 else { throw ReplayError("'\(text)' is a negative offset") }
            self = .offset(offset)
        } else if let time = Timestamp(rfc3339: text) {
            self = .time(time)
        } else {
            throw ReplayError("'\(text)' is neither an offset (an integer) nor an RFC 3339 time such as 2026-11-21T09:00:00Z")
        }
    }

    /// The error text of `--from`/`--to` that give an empty or inverted range by themselves
    /// (two offsets, or two times, the first not before the second); nil otherwise. A mixed pair
    /// is checked once the time is resolved to an offset (`ReplayRange.resolve`).
    public static func inverted(from: ReplayBound, to: ReplayBound?) -> String? {
        switch (from, to) {
        case (.offset(let start), .offset(let stop)?) where start >= stop:
            return "--from offset \(start) is not before --to offset \(stop): the range is empty (--to is the first offset not replayed)"
        case (.time(let start), .time(let stop)?) where start >= stop:
            return "--from \(start.rfc3339) is not before --to \(stop.rfc3339): the range is empty (did you swap them?)"
        default:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .offset(let offset): "offset \(offset)"
        case .time(let time): time.rfc3339
        }
    }
}

/// The offsets of one folded partition that a replay re-runs: `from` up to, not including, `to`.
///
/// A time resolves to the first offset whose record timestamp is at or after it: Kafka's
/// offsets-for-times rule, computed by scanning the partition's timestamps because some brokers
/// (the local test broker) answer offsets-for-times with 0. Timestamps of a `CreateTime` topic
/// need not increase along the log; the rule still gives one well-defined offset, and the range
/// is every record between the two offsets, whatever its timestamp.
public struct ReplayRange: Hashable, Sendable, CustomStringConvertible {
    public var partition: Int32
    public var from: Int64
    public var to: Int64

    public init(partition: Int32, from: Int64, to: Int64) {
        self.partition = partition; self.from = from; self.to = to
    }

    public func contains(_ offset: Int64) -> Bool { offset >= from && offset < to }

    public var description: String { "partition \(partition), offsets \(from)..<\(to)" }

    /// Resolves `from` and `to` (nil: the end of the partition as read) against the partition's
    /// records, given as (offset, timestamp) in offset order; `end` is the offset after the last
    /// record read.
    public static func resolve(
        partition: Int32, from: ReplayBound, to: ReplayBound?, records: [(offset: Int64, timestamp: Timestamp?)], end: Int64
    ) throws(ReplayError) -> ReplayRange {
        func offset(_ bound: ReplayBound) -> Int64 {
            switch bound {
            case .offset(let offset): return min(offset, end)
            case .time(let time):
                return records.first { $0.timestamp.map { $0 >= time } ?? false }?.offset ?? end
            }
        }
        let start = offset(from)
        let stop = to.map(offset) ?? end
        guard start <= stop else {
            throw ReplayError("the range is empty: --from (\(from)) resolves to offset \(start), after --to (\(to.map(String.init(describing:)) ?? "end")) at offset \(stop)")
        }
        return ReplayRange(partition: partition, from: start, to: stop)
    }
}

/// A replay or export that cannot be done, said so that an operator knows what to change.
public struct ReplayError: Error, CustomStringConvertible, Sendable, Hashable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
