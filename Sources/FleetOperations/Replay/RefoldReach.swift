public import FleetModel
import FleetWorkers
public import Kafka

/// Which users a re-fold can touch, from the records it folds: a step changes the user of its
/// record and the users whose timers fall due by its time (`PartitionFold`: due at or before
/// the larger of the record's timestamp and the log time), and no one else. So the start state
/// of a replay needs only these users' states (`StartState.Builder.state(keeping:)`): memory
/// for the range's users, not the partition's.
public struct RefoldReach: Sendable {
    /// The records' users: their keys and, for records that decode, their `user_id`.
    private(set) var users: Set<String> = []
    /// The latest record timestamp; `unbounded` once a record has none (then every timer is
    /// taken as possibly due).
    private(set) var latest: Timestamp?
    private(set) var unbounded = false

    public init() {}

    public mutating func add(_ message: KafkaMessage, limits: RecordLimits) {
        if let key = message.key { users.insert(String(decoding: key, as: UTF8.self)) }
        if let record = try? KafkaRecords.decode(message, limits: limits), !record.userId.isEmpty { users.insert(record.userId) }
        guard let timestamp = message.timestamp else {
            unbounded = true
            return
        }
        let time = Timestamp(millisecondsSinceEpoch: timestamp)
        latest = max(latest ?? time, time)
    }

    /// Whether the re-fold can touch `user`, whose state before it is `state`; `logTime` is the
    /// log time the re-fold starts from.
    public func touches<P: UserProcessor>(_ user: String, _ state: P.State, logTime: Timestamp?, processor: P) -> Bool {
        if users.contains(user) || unbounded { return true }
        guard let due = processor.nextWakeUp(state) else { return false }
        guard let reached = [latest, logTime].compactMap({ $0 }).max() else { return false }
        return due <= reached
    }
}
