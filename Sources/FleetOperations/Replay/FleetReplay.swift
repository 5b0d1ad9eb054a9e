public import FleetModel
public import FleetSimulation
import FleetWorkers
import Kafka

/// `fleetctl replay` against the brokers: "would the fleet decide the same again, and what if
/// the policy were different?" (DESIGN.md principle 6).
///
/// It reads, without writing anything and without joining a consumer group (`FleetTopicReader`):
/// the worker's folded partition, its `<worker>.history` and `<worker>.state` partitions, and
/// the worker's output and dead-letter topics. It rebuilds the fold at the range's start
/// (`StartState`), re-runs the range through the runtime's fold (`PartitionReplay`) with the
/// processor the worker runs (`WorkerProcessors`), and compares.
///
/// For one user it replays the whole partition range and keeps that user's records: a user's
/// timers fire inside other users' steps (the log time they bring), with those steps' ids, so
/// only a re-run of every record reproduces them exactly.
///
/// Every read goes to the end of each partition as of the read; a range reaching records the
/// worker has not yet processed reports their outputs as "extra": end the range earlier.
public struct FleetReplay: Sendable {
    /// Which part of the partition is compared.
    public enum Scope: Sendable, Hashable {
        case partition(Int32)
        /// The user's partition (murmur2 of the user id, as the producers place it), only that
        /// user's records compared.
        case user(String)
    }

    public struct Request: Sendable {
        public var worker: Worker
        public var scope: Scope
        public var from: ReplayBound
        /// nil: to the end of the partition.
        public var to: ReplayBound?
        /// The profile the worker ran with (its `FLEET_PROFILE`).
        public var baseline: FleetProfile
        /// A profile to ask "what if" with; nil compares with what was recorded.
        public var candidate: FleetProfile?
        /// The generation of the worker's log replayed (its topics after a partition migration,
        /// see `WorkerTopics`); nil: the one the worker folds now, per the registry.
        public var generation: Int?
        /// The record contract's sizes the worker ran with (its `FLEET_MAX_*_BYTES`): the
        /// fold refuses by them, so a replay agrees only with the same.
        public var limits: RecordLimits

        public init(
            worker: Worker, scope: Scope, from: ReplayBound, to: ReplayBound?, baseline: FleetProfile, candidate: FleetProfile?,
            generation: Int? = nil, limits: RecordLimits = .standard
        ) {
            self.worker = worker; self.scope = scope; self.from = from; self.to = to
            self.baseline = baseline; self.candidate = candidate; self.generation = generation; self.limits = limits
        }
    }

    public enum Verdict: Sendable {
        /// Recorded against replayed with the worker's own profile.
        case comparison(ReplayComparison)
        /// Recorded against replayed with the candidate profile.
        case whatIf(WhatIfSummary)
    }

    public struct Report: Sendable {
        /// The topics read: `topics.folded` is the log whose offsets `range` gives.
        public var topics: WorkerTopics
        public var range: ReplayRange
        /// Records of the range re-run.
        public var recordsReplayed: Int
        public var verdict: Verdict
        /// The outputs the replay produced (output records and dead letters), in order.
        public var replayedOutputs: [ComparedRecord]
    }

    public var reader: FleetTopicReader

    public init(reader: FleetTopicReader) { self.reader = reader }

    public func run(_ request: Request) async throws -> Report {
        let topics = try await WorkerTopics.resolve(worker: request.worker, generation: request.generation, reader: reader)
        let rangeReader = RangeReader(reader: reader, topics: topics)
        let read = try await rangeReader.read(scope: request.scope, from: request.from, to: request.to, withChangelogs: true)
        let user: String? = if case .user(let user) = request.scope { user } else { nil }
        let profile = request.candidate ?? request.baseline
        let replayed = try await WorkerProcessors.visit(
            request.worker, profile: profile,
            Rerun(log: read.log, history: read.history, changelog: read.changelog, range: read.range, topics: topics, limits: request.limits))

        var outputs: [KafkaMessage] = []
        var deadLetters: [KafkaMessage] = []
        for message in try await rangeReader.recordedOutputs(partition: read.range.partition) {
            if message.topic == topics.deadLetter { deadLetters.append(message) } else { outputs.append(message) }
        }
        let recorded = RecordedRange(
            outputs: outputs, deadLetters: deadLetters, history: read.history, range: read.range,
            stems: replayed.stems, topics: topics, user: user)
        let mine = { (record: ComparedRecord) in user == nil || record.userId == user }
        let verdict: Verdict
        if request.candidate != nil {
            let replayedRecords = replayed.records.filter { user == nil || $0.userId == user }
            verdict = .whatIf(WhatIfSummary(recorded: recorded.records, replayed: replayedRecords, intentTypes: read.intentTypes))
        } else {
            // A change recorded with JSON images (before the upgrade to binary images, or under
            // FLEET_STATE_IMAGES=json) is compared with the replay's change in that form.
            let jsonRecorded = Set(recorded.history.filter { $0.value.first == UInt8(ascii: "{") }.map(\.key))
            let history = replayed.history.map { jsonRecorded.contains($0.key) ? replayed.jsonHistory[$0.key] ?? $0 : $0 }
            verdict = .comparison(ReplayComparison(
                recorded: recorded.outputs + recorded.history,
                replayed: replayed.outputs.filter(mine) + history.filter(mine)))
        }
        return Report(
            topics: topics, range: read.range, recordsReplayed: read.rangeLog.count, verdict: verdict,
            replayedOutputs: replayed.outputs.filter(mine))
    }

    /// Rebuilds the start state and re-runs the range with whichever processor the worker runs.
    private struct Rerun: WorkerProcessorVisitor {
        let log: [KafkaMessage]
        let history: [KafkaMessage]
        let changelog: [KafkaMessage]
        let range: ReplayRange
        let topics: WorkerTopics
        let limits: RecordLimits

        func visit<P: UserProcessor>(_ processor: P) async throws -> ReplayedRange {
            var changes: [HistoryChange<P.State>] = []
            for message in history { changes.append(try HistoryChange<P.State>(message)) }
            var entries: [ChangelogRecords.Entry<P.State>] = []
            for message in changelog {
                do {
                    entries.append(try ChangelogRecords.entry(of: message, as: P.State.self))
                } catch {
                    throw ReplayError("\(topics.state): \(error.description)")
                }
            }
            let points = log.filter { $0.offset < range.from }.map { message in
                StartState<P.State>.LogPoint(
                    offset: message.offset, timestamp: message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)),
                    decodes: (try? KafkaRecords.decode(message, limits: limits)) != nil)
            }
            let start = StartState<P.State>.before(range.from, history: changes, changelog: entries, log: points)
            return try PartitionReplay.run(
                processor, from: start, log: log.filter { range.contains($0.offset) }, topics: topics, limits: limits)
        }
    }
}

extension FleetReplay.Report {
    /// What `fleetctl replay` prints: a line naming what was replayed, then "identical", each
    /// difference, or the what-if summary.
    public func render(worker: Worker, details: Bool) -> String {
        let head = "\(worker.rawValue): replayed \(topics.folded)[\(range.partition)] offsets \(range.from)..<\(range.to) (\(recordsReplayed) records)"
        switch verdict {
        case .comparison(let comparison): return head + "\n" + comparison.render()
        case .whatIf(let summary): return head + "\n" + summary.render(details: details)
        }
    }

    /// Whether the comparison found the recorded outputs reproduced (always true for a what-if).
    public var isIdentical: Bool {
        if case .comparison(let comparison) = verdict { return comparison.isIdentical }
        return true
    }
}
