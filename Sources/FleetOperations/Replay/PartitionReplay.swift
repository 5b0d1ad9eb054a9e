public import FleetModel
import FleetWorkers
public import Kafka

/// What re-running a range produced, in the shape replay compares.
public struct ReplayedRange: Sendable {
    /// Output records and dead letters, in the order the worker would write them.
    public var outputs: [ComparedRecord] = []
    /// The `<worker>.history` changes it would write.
    public var history: [ComparedRecord] = []
    /// The same changes as a worker with `FLEET_STATE_IMAGES=json` (or a build before binary
    /// images) writes them, by key: a recorded change in that form is compared with these, so a
    /// range recorded before an upgrade still replays as identical.
    public var jsonHistory: [String: ComparedRecord] = [:]
    /// The output records themselves, in order, for the what-if summary.
    public var records: [FleetRecord] = []
    /// The id stem (`OutputIDs` without the final index) of every step re-run: a recorded
    /// output belongs to the range exactly when its id has one of these stems.
    public var stems: Set<String> = []

    public init() {}
}

/// Re-runs a range of one folded partition with a processor, from a start state, through the
/// runtime's own fold (`LogFolding`): what a worker with that processor writes for those records.
public enum PartitionReplay {
    /// - Parameters:
    ///   - log: the range's records with logical topic names, in offset order.
    public static func run<P: UserProcessor>(
        _ processor: P, from start: StartState<P.State>, log: [KafkaMessage], topics: WorkerTopics,
        limits: RecordLimits = .standard
    ) throws(ReplayError) -> ReplayedRange {
        var fold = PartitionFold(processor: processor, restoring: start.states, logTime: start.logTime)
        var replayed = ReplayedRange()
        let logical = TopicNamespace()
        for message in log {
            let folded = LogFolding.fold(message, into: &fold, limits: limits)
            replayed.stems.insert(stem(of: folded.origin, originIndex: folded.originIndex))
            if let error = folded.deadLetter {
                let letter = KafkaRecords.deadLetter(message, error: error, in: logical, limits: limits)
                replayed.outputs.append(ComparedRecord(letter, key: deadLetterKey(partition: message.partition, offset: message.offset)))
            }
            guard let step = folded.step else { continue }
            for (index, (output, value)) in zip(step.outputs, folded.outputValues).enumerated() {
                let record = LogFolding.producerRecord(for: output, value: value, index: index, of: folded.origin, in: logical)
                replayed.outputs.append(ComparedRecord(record, key: output.record.id))
                replayed.records.append(output.record)
            }
            let input = KafkaRecords.coordinates(message)
            let logTime = fold.logTime ?? folded.timestamp
            for change in step.changes {
                let before: [UInt8]?
                let after: [UInt8]
                do {
                    before = try change.before.map { try StateCoding.encode($0) }
                    after = try StateCoding.encode(change.after)
                } catch {
                    throw ReplayError("cannot encode the state of user \(change.userId): \(error)")
                }
                let record = ChangelogRecords.change(
                    userId: change.userId, before: before, after: after, input: input, logTime: logTime,
                    topic: topics.history, partition: message.partition)
                let key = historyKey(user: change.userId, inputOffset: message.offset)
                replayed.history.append(ComparedRecord(record, key: key))
                if let jsonAfter = try? StateCoding.encode(change.after, as: .json) {
                    let jsonBefore = change.before.flatMap { try? StateCoding.encode($0, as: .json) }
                    replayed.jsonHistory[key] = ComparedRecord(ChangelogRecords.change(
                        userId: change.userId, before: jsonBefore, after: jsonAfter, input: input, logTime: logTime,
                        topic: topics.history, partition: message.partition), key: key)
                }
            }
        }
        return replayed
    }

    /// The id stem of a step at `origin`: its output ids are `<stem>:<index>` (`OutputIDs`).
    public static func stem(of origin: SourceCoordinates, originIndex: Int?) -> String {
        var ids = OutputIDs(origin: origin, originIndex: originIndex)
        return String(ids.next().dropLast(2))  // the first id ends in ":0"
    }

    /// The stem of an output id: everything before its last `:`.
    public static func stem(ofId id: String) -> Substring? {
        guard let colon = id.lastIndex(of: ":") else { return nil }
        return id[..<colon]
    }

    static func deadLetterKey(partition: Int32, offset: Int64) -> String { "source \(partition):\(offset)" }
    static func historyKey(user: String, inputOffset: Int64) -> String { "\(user)@\(inputOffset)" }
}
