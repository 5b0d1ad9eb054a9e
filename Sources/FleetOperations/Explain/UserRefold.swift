public import DeliveryPolicy
public import FleetModel
import FleetWorkers
import Kafka

/// A user's state before and after a step of the delivery worker's log, re-folded.
public struct RefoldedStep: Sendable {
    /// nil: the user was not stored before the step.
    public var before: DeliveryState?
    public var after: DeliveryState
    /// The partition's log time after the step.
    public var logTime: Timestamp
}

/// The user's state around each input of a commit unit in which the user changed more than
/// once (DESIGN.md principle 6).
///
/// The history holds one image per changed user per commit unit, so a state inside a unit is
/// not recorded: it is re-folded from the nearest images. At the first input of any unit
/// (`unit_start`) every user's state is their last image below it (`RefoldBase`), so the
/// partition's fold is rebuilt there (`StartState.Builder` over the history and changelog
/// partitions, streamed) and the log is folded from there, with the worker's processor
/// (`DeliveryEngine` with the profile it runs) and the runtime's own step (`LogFolding`), to the
/// last input needed. Memory grows with the partition's users (their states at the base), time
/// with the log from the earliest such unit on: explain with `--since` re-folds only the units
/// whose last input is in the log it reads.
enum UserRefold {
    /// The re-folded steps of `user`'s multi-change units among `history` (the user's decoded
    /// history records of `generation`'s log), by log position. Empty when there is none.
    static func steps(
        user: String, history: [HistoryChange<DeliveryState>], generation: UserLog.LogGeneration, logStart: Int64?,
        profile: PolicyProfile, reader: FleetTopicReader
    ) async throws -> [SourceCoordinates: RefoldedStep] {
        let units = history.filter { $0.form == .unitImage && $0.changed.count > 1 && $0.inputOffset >= (logStart ?? 0) }
        guard let base = units.map(\.unitStart).min(), let end = units.map(\.inputOffset).max() else { return [:] }
        let wanted = Set(units.flatMap(\.changed))
        let topics = Worker.delivery.topics(generation: generation.generation)
        let partition = generation.partition

        var builder = StartState<DeliveryState>.Builder(start: base)
        try await reader.stream([TopicPartition(topics.history, partition): KafkaConsumer.beginning]) { message in
            if message.header(StateRekeying.copiedFromHeader) != nil {
                let copy = try ChangelogRecords.historyEntry(of: message, as: DeliveryState.self)
                builder.add(.state(userId: copy.userId, inputOffset: ChangelogRecords.migratedInputOffset, state: copy.after))
            } else {
                builder.add(try HistoryChange<DeliveryState>(message))
            }
        }
        try await reader.stream([TopicPartition(topics.state, partition): KafkaConsumer.beginning]) { message in
            builder.add(try ChangelogRecords.entry(of: message, as: DeliveryState.self))
        }
        let start = builder.checkpointOffset.map { min($0 + 1, base) } ?? KafkaConsumer.beginning
        var fold: PartitionFold<DeliveryEngine>?
        var steps: [SourceCoordinates: RefoldedStep] = [:]
        do {
            try await reader.stream([TopicPartition(topics.log, partition): start]) { message in
                if message.offset > end { throw StopReading() }
                if message.offset < base {
                    builder.add(StartState<DeliveryState>.LogPoint(
                        offset: message.offset, timestamp: message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)),
                        decodes: (try? KafkaRecords.decode(message)) != nil))
                    return
                }
                if fold == nil {
                    let state = builder.state
                    fold = PartitionFold(processor: DeliveryEngine(profile: profile), restoring: state.states, logTime: state.logTime)
                }
                guard var current = fold.take() else { return }
                let folded = LogFolding.fold(message, into: &current, limits: .standard)
                let logTime = current.logTime ?? folded.timestamp
                fold = current
                guard wanted.contains(message.offset), let step = folded.step else { return }
                let mine = step.changes.filter { $0.userId == user }
                guard let first = mine.first, let last = mine.last else { return }
                steps[KafkaRecords.coordinates(message)] = RefoldedStep(before: first.before, after: last.after, logTime: logTime)
            }
        } catch is StopReading {}
        return steps
    }
}
