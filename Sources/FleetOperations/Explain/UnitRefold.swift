public import FleetModel
public import FleetWorkers
public import Kafka

/// The pure part of re-folding a user's multi-change commit units (`UserRefold`): each unit on
/// its own, from the states at its start of only the users it needs, so memory grows with the
/// users of the units' log ranges rather than with the partition's (DESIGN.md principle 6).
///
/// For a unit that began at `unit_start` S and last changed the user at L, the user's states
/// inside it depend only on
/// - the states at S of the users folded in [S, L]: those whose records lie there (whether their
///   record is accepted, and so which ids a step hands out, can depend on their state) and those
///   the unit changed without a record of theirs (a timer that fired: its outputs take ids of
///   the step before the user's own timer does), which the unit's images name;
/// - the partition's log time at S: the latest checkpoint below S moved on by every decodable
///   record from it to S (`StartState.Builder`).
/// At S every user's state is their last image below it (`RefoldBase`), so each unit's fold is
/// rebuilt there exactly and folded with the runtime's own step (`LogFolding`) to L.
///
/// Feed it in stages, each a pass its caller streams: the records of `ranges` (`noteRange`) and
/// the places of every history record (`notePlace`); then the history and changelog records of
/// the users `wants` (`add`; position records always); then the log over `foldRanges`, in
/// offset order (`fold`). `steps` is the result.
public struct UnitRefold<P: UserProcessor>: Sendable {
    /// The user's state around one input of a re-folded unit.
    public struct Step: Sendable, Hashable {
        /// nil: the user was not stored before the input.
        public var before: P.State?
        public var after: P.State
        /// The partition's log time after the input.
        public var logTime: Timestamp
    }

    /// One commit unit that changed the user more than once.
    struct Unit: Sendable {
        var start: Int64
        var changed: Set<Int64>
        var last: Int64
        var users: Set<String> = []
        var builder: StartState<P.State>.Builder
        var fold: PartitionFold<P>?
    }

    public let user: String
    public let processor: P
    public let limits: RecordLimits
    private var units: [Unit]
    private var wanted: Set<[UInt8]> = []
    public private(set) var steps: [SourceCoordinates: Step] = [:]

    /// `images`: the user's per-unit history images of one log; those that changed the user more
    /// than once are re-folded (copies an at-least-once attempt wrote for the same unit once).
    public init(user: String, images: [HistoryChange<P.State>], processor: P, limits: RecordLimits = .standard) {
        self.user = user; self.processor = processor; self.limits = limits
        var seen = Set<[Int64]>()
        var units: [Unit] = []
        for image in images.sorted(by: { ($0.unitStart, $0.inputOffset) < ($1.unitStart, $1.inputOffset) })
        where image.form == .unitImage && image.changed.count > 1 && image.userId == user {
            guard seen.insert([image.unitStart] + image.changed).inserted else { continue }
            units.append(Unit(
                start: image.unitStart, changed: Set(image.changed), last: image.inputOffset, users: [user],
                builder: StartState<P.State>.Builder(start: image.unitStart)))
        }
        self.units = units
        self.wanted = [Array(user.utf8)]
    }

    /// Whether there is any unit to re-fold.
    public var isEmpty: Bool { units.isEmpty }

    /// The log ranges [S, L] of the units, merged, ascending: read them first (`noteRange`).
    public var ranges: [ClosedRange<Int64>] { Self.merged(units.map { $0.start...$0.last }) }

    /// A record of the log: its key names a user a unit folds if it lies in the unit's range.
    public mutating func noteRange(_ message: KafkaMessage) {
        guard let key = message.key else { return }
        for index in units.indices where (units[index].start...units[index].last).contains(message.offset) {
            units[index].users.insert(String(decoding: key, as: UTF8.self))
            wanted.insert(key)
        }
    }

    /// A history record's place: a user a unit changed (a timer, say) is one it folds.
    public mutating func notePlace(_ place: ChangelogRecords.HistoryPlace) {
        for index in units.indices where place.unitStart <= units[index].last && place.lastOffset >= units[index].start {
            units[index].users.insert(place.userId)
            wanted.insert(Array(place.userId.utf8))
        }
    }

    /// Whether the history or changelog records under `key` are needed; decode only those
    /// (and the changelog's position records, whose key is `ChangelogRecords.positionKey`).
    public func wants(key: [UInt8]?) -> Bool {
        guard let key else { return false }
        return wanted.contains(key)
    }

    /// A history record (a migration's copy goes in as a changelog state entry): kept by the
    /// units that fold its user only, so each unit holds the images of its own users.
    public mutating func add(_ change: HistoryChange<P.State>) {
        for index in units.indices where units[index].users.contains(change.userId) {
            units[index].builder.add(change)
        }
    }

    /// A changelog entry: a user's state, kept by the units that fold the user; a position, a
    /// checkpoint for every unit.
    public mutating func add(_ entry: ChangelogRecords.Entry<P.State>) {
        for index in units.indices {
            if case .state(let owner, _, _) = entry, !units[index].users.contains(owner) { continue }
            units[index].builder.add(entry)
        }
    }

    /// The log ranges to fold, merged, ascending: each unit's from its checkpoint to its last
    /// change (`fold`).
    public var foldRanges: [ClosedRange<Int64>] {
        Self.merged(units.map { unit in (unit.builder.checkpointOffset.map { min($0 + 1, unit.start) } ?? 0)...unit.last })
    }

    /// A record of `foldRanges`, in offset order: moves each unit's log time on before its start,
    /// and folds it into the unit's partition from there, keeping the user's steps at its changes.
    public mutating func fold(_ message: KafkaMessage) {
        for index in units.indices {
            let start = units[index].start, last = units[index].last
            if message.offset < start {
                units[index].builder.add(StartState<P.State>.LogPoint(
                    offset: message.offset, timestamp: message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)),
                    decodes: (try? KafkaRecords.decode(message, limits: limits)) != nil))
                continue
            }
            guard message.offset <= last else { continue }
            var current: PartitionFold<P>
            if let existing = units[index].fold {
                current = existing
                units[index].fold = nil
            } else {
                let state = units[index].builder.state
                current = PartitionFold(processor: processor, restoring: state.states, logTime: state.logTime)
                units[index].builder = StartState<P.State>.Builder(start: start)  // its images are in the fold now
            }
            let folded = LogFolding.fold(message, into: &current, limits: limits)
            let logTime = current.logTime ?? folded.timestamp
            if message.offset < last { units[index].fold = current }
            guard units[index].changed.contains(message.offset), let step = folded.step else { continue }
            let mine = step.changes.filter { $0.userId == user }
            guard let first = mine.first, let final = mine.last else { continue }
            steps[KafkaRecords.coordinates(message)] = Step(before: first.before, after: final.after, logTime: logTime)
        }
    }

    /// Every stage over in-memory inputs (tests; the broker reader streams them instead).
    public static func refold(
        user: String, images: [HistoryChange<P.State>], processor: P, log: [KafkaMessage], history: [KafkaMessage],
        changelog: [KafkaMessage], limits: RecordLimits = .standard
    ) throws -> [SourceCoordinates: Step] {
        var refold = UnitRefold(user: user, images: images, processor: processor, limits: limits)
        for range in refold.ranges { for message in log where range.contains(message.offset) { refold.noteRange(message) } }
        for message in history { refold.notePlace(try ChangelogRecords.historyPlace(of: message)) }
        for message in history where refold.wants(key: message.key) { refold.add(try HistoryChange<P.State>(message)) }
        for message in changelog where message.key == Array(ChangelogRecords.positionKey.utf8) || refold.wants(key: message.key) {
            refold.add(try ChangelogRecords.entry(of: message, as: P.State.self))
        }
        for range in refold.foldRanges { for message in log where range.contains(message.offset) { refold.fold(message) } }
        return refold.steps
    }

    static func merged(_ ranges: [ClosedRange<Int64>]) -> [ClosedRange<Int64>] {
        var merged: [ClosedRange<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}
