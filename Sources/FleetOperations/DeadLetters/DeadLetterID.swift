public import FleetModel

/// What identifies a dead letter to an operator: the identity of the record that failed, i.e.
/// the coordinates its output ids derive from (`topic:partition:offset`, plus `:index` for a
/// record a fleet worker wrote into an inbox). `fleetctl dlq list` shows it, `--id` takes it.
///
/// It is the failed record's identity rather than the dead letter's own position because a
/// redrive keeps that identity: a redriven copy that fails again is dead-lettered under the same
/// id, and its outputs, once it succeeds, carry ids with this stem.
public struct DeadLetterID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var origin: SourceCoordinates
    /// The record's position among its upstream step's outputs (`source-index`), if any.
    public var index: Int?

    public init(origin: SourceCoordinates, index: Int? = nil) {
        self.origin = origin
        self.index = index
    }

    /// Parses `topic:partition:offset` or `topic:partition:offset:index`. Topic names cannot
    /// contain ':', so the numbers are the last two or three fields.
    public init?(_ text: String) {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 3 || fields.count == 4, !fields[0].isEmpty,
              let partition = Int32(fields[1]), partition >= 0,
              let offset = Int64(fields[2]), offset >= 0
        else { return nil }
        var index: Int?
        if fields.count == 4 {
            guard let parsed = Int(fields[3]), parsed >= 0 else { return nil }
            index = parsed
        }
        self.init(origin: SourceCoordinates(topic: fields[0], partition: partition, offset: offset), index: index)
    }

    public var description: String { index.map { "\(origin):\($0)" } ?? origin.description }

    public static func < (lhs: DeadLetterID, rhs: DeadLetterID) -> Bool {
        (lhs.origin.topic, lhs.origin.partition, lhs.origin.offset, lhs.index ?? -1)
            < (rhs.origin.topic, rhs.origin.partition, rhs.origin.offset, rhs.index ?? -1)
    }
}
