import Foundation
public import FleetModel
public import Kafka
import FleetWorkers

/// One record of `<worker>.history` (see `ChangelogRecords.change`): a user's state before and
/// after the folded record at `inputOffset`, and the partition's log time after it.
public struct HistoryChange<State: Codable & Hashable & Sendable>: Sendable {
    public var userId: String
    public var inputOffset: Int64
    public var before: State?
    public var after: State
    public var logTime: Timestamp

    public init(userId: String, inputOffset: Int64, before: State?, after: State, logTime: Timestamp) {
        self.userId = userId; self.inputOffset = inputOffset; self.before = before; self.after = after; self.logTime = logTime
    }

    /// Decodes a history record (binary, or JSON from a version before binary images); throws
    /// naming the record when it is not one.
    public init(_ message: KafkaMessage) throws(ReplayError) {
        let change: ChangelogRecords.Change<State>
        do {
            change = try ChangelogRecords.change(of: message, as: State.self)
        } catch {
            throw ReplayError(error.description)
        }
        self.init(userId: change.userId, inputOffset: change.input.offset, before: change.before, after: change.after, logTime: change.logTime)
    }
}
