import Foundation
public import FleetModel
public import Kafka
public import FleetWorkers

/// One record of `<worker>.history` decoded, whatever form it was written in
/// (`ChangelogRecords.HistoryForm`): a user's state after the input at `inputOffset`, and the
/// partition's log time after it.
///
/// A per-unit image (this build) covers the inputs `changed` of a commit unit that began at
/// `unitStart`, and has no before-image; a per-input change record (the builds before) is a
/// unit of one input, with its before-image.
public struct HistoryChange<State: Codable & Hashable & Sendable>: Sendable {
    public var userId: String
    /// The input offset `after` is as of: the last of `changed`.
    public var inputOffset: Int64
    /// The first input offset of the commit unit the record was written in (a change record:
    /// `inputOffset`).
    public var unitStart: Int64
    /// The input offsets at which the user changed in that unit, ascending.
    public var changed: [Int64]
    /// The state before the input, for a change record (nil: the user was not stored);
    /// meaningless when `hasBefore` is false (a unit image carries none).
    public var before: State?
    public var hasBefore: Bool
    public var after: State
    public var logTime: Timestamp
    public var form: ChangelogRecords.HistoryForm
    /// The log the offsets are of (logical name); empty for a change built by hand.
    public var inputTopic: String

    /// A per-input change record's content.
    public init(userId: String, inputOffset: Int64, before: State?, after: State, logTime: Timestamp) {
        self.userId = userId; self.inputOffset = inputOffset; self.unitStart = inputOffset; self.changed = [inputOffset]
        self.before = before; self.hasBefore = true; self.after = after; self.logTime = logTime; self.form = .binaryChange
        self.inputTopic = ""
    }

    /// Decodes a history record of any form; throws naming the record when it is not one.
    public init(_ message: KafkaMessage) throws(ReplayError) {
        let entry: ChangelogRecords.HistoryEntry<State>
        do {
            entry = try ChangelogRecords.historyEntry(of: message, as: State.self)
        } catch {
            throw ReplayError(error.description)
        }
        userId = entry.userId
        inputOffset = entry.place.lastOffset
        unitStart = entry.place.unitStart
        changed = entry.place.changed
        after = entry.after
        logTime = entry.logTime
        form = entry.place.form
        inputTopic = entry.place.inputTopic
        switch entry.before {
        case .some(let before): self.before = before; hasBefore = true
        case .none: self.before = nil; hasBefore = false
        }
    }
}

/// Where a replay must begin folding so that every state it needs is known exactly: the first
/// pass over `<worker>.history`, on the records' places only (no image decoded).
///
/// A history image is written per commit unit, so a user's state inside a unit is not recorded;
/// but at the first input offset of any unit (`unit_start`) every user's state is their last
/// image below it: a unit starts only once every earlier input's images were acknowledged (after
/// the previous unit, or at the committed offset a restore starts from), and images an
/// uncommitted attempt wrote are states the deterministic fold reaches again. So the fold at
/// `start` is rebuilt from the history at `base`, the earliest start of a unit that spans
/// `start` (began before it and changed a user at or after it), and the log from `base` to
/// `start` is re-folded. With no such unit (per-input change records, or `start` at a unit's
/// start), `base` is `start`.
public struct RefoldBase: Sendable {
    public let start: Int64
    public private(set) var base: Int64

    public init(start: Int64) { self.start = start; self.base = start }

    public mutating func add(_ place: ChangelogRecords.HistoryPlace) {
        if place.unitStart < start, place.lastOffset >= start { base = min(base, place.unitStart) }
    }
}
