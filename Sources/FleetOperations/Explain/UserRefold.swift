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
/// once (DESIGN.md principle 6), read from the broker.
///
/// The history holds one image per changed user per commit unit, so a state inside a unit is
/// not recorded: it is re-folded from the nearest images, each unit on its own (`UnitRefold`):
/// at the unit's start S every user's state is their last image below it (`RefoldBase`), and
/// the user's states inside it depend only on the users folded in [S, L] (L: the unit's last
/// change of the user) and on the log time at S. So this reads each unit's log range first,
/// then the history (places, then the wanted users' records only, skipped by key before
/// decoding) and the changelog (their states and every position record), then the log from
/// each unit's checkpoint to L, folded with the worker's processor (`DeliveryEngine` with the
/// profile it runs) and the runtime's own step (`LogFolding`). Memory grows with the users of
/// the units' ranges (one commit unit each), not with the partition's; time with the history
/// and changelog partitions (read twice and once) plus the short log ranges. Explain with
/// `--since` re-folds only the units whose last input is in the log it reads.
enum UserRefold {
    /// The re-folded steps of `user`'s multi-change units among `history` (the user's decoded
    /// history records of `generation`'s log), by log position. Empty when there is none.
    static func steps(
        user: String, history: [HistoryChange<DeliveryState>], generation: UserLog.LogGeneration, logStart: Int64?,
        profile: PolicyProfile, reader: FleetTopicReader
    ) async throws -> [SourceCoordinates: RefoldedStep] {
        let images = history.filter { $0.inputOffset >= (logStart ?? 0) }
        var refold = UnitRefold(user: user, images: images, processor: DeliveryEngine(profile: profile))
        guard !refold.isEmpty else { return [:] }
        let topics = Worker.delivery.topics(generation: generation.generation)
        let partition = generation.partition
        let log = TopicPartition(topics.log, partition)

        for range in refold.ranges {
            try await stream(log, range, reader) { refold.noteRange($0) }
        }
        try await reader.stream([TopicPartition(topics.history, partition): KafkaConsumer.beginning]) { message in
            refold.notePlace(try ChangelogRecords.historyPlace(of: message))
        }
        try await reader.stream([TopicPartition(topics.history, partition): KafkaConsumer.beginning]) { message in
            guard refold.wants(key: message.key) else { return }
            if message.header(StateRekeying.copiedFromHeader) != nil {
                let copy = try ChangelogRecords.historyEntry(of: message, as: DeliveryState.self)
                refold.add(.state(userId: copy.userId, inputOffset: ChangelogRecords.migratedInputOffset, state: copy.after))
            } else {
                refold.add(try HistoryChange<DeliveryState>(message))
            }
        }
        let positionKey = Array(ChangelogRecords.positionKey.utf8)
        try await reader.stream([TopicPartition(topics.state, partition): KafkaConsumer.beginning]) { message in
            guard message.key == positionKey || refold.wants(key: message.key) else { return }
            refold.add(try ChangelogRecords.entry(of: message, as: DeliveryState.self))
        }
        for range in refold.foldRanges {
            try await stream(log, range, reader) { refold.fold($0) }
        }
        return refold.steps.mapValues { RefoldedStep(before: $0.before, after: $0.after, logTime: $0.logTime) }
    }

    /// The records of `range` of `partition`, in offset order.
    private static func stream(
        _ partition: TopicPartition, _ range: ClosedRange<Int64>, _ reader: FleetTopicReader, body: (KafkaMessage) throws -> Void
    ) async throws {
        do {
            try await reader.stream([partition: range.lowerBound > 0 ? range.lowerBound : KafkaConsumer.beginning]) { message in
                if message.offset > range.upperBound { throw StopReading() }
                try body(message)
            }
        } catch is StopReading {}
    }
}
