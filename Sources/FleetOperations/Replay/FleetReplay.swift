public import FleetModel
public import FleetSimulation
import FleetWorkers
import Kafka

/// `fleetctl replay` against the brokers: "would the fleet decide the same again, and what if
/// the policy were different?" (DESIGN.md principle 6).
///
/// It reads, without writing anything and without joining a consumer group (`FleetTopicReader`):
/// the worker's folded partition, its `<worker>.history` and `<worker>.state` partitions, and
/// the worker's output and dead-letter topics. It rebuilds the fold at the nearest point before
/// the range where every state is recorded (`RefoldBase`, `StartState`), re-folds the log from
/// there through the range with the runtime's fold (`PartitionReplay`) and the processor the
/// worker runs (`WorkerProcessors`), and compares.
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
        let partition = try await rangeReader.partition(of: request.scope)
        let bounds = try await rangeReader.offsets(partition: partition, from: request.from, to: request.to)
        let user: String? = if case .user(let user) = request.scope { user } else { nil }
        let profile = request.candidate ?? request.baseline
        let rerun = try await WorkerProcessors.visit(
            request.worker, profile: profile,
            Rerun(rangeReader: rangeReader, partition: partition, bounds: bounds, given: (request.from, request.to), limits: request.limits))
        let replayed = rerun.replayed
        let read = rerun.read

        // Only the outputs the range's steps wrote (their steps' stems) and its dead letters are kept.
        let stems = replayed.stems
        var outputs: [KafkaMessage] = []
        var deadLetters: [KafkaMessage] = []
        let recordedOutputs = try await rangeReader.recordedOutputs(partition: read.range.partition) { message in
            if message.topic == topics.deadLetter {
                guard let source = message.header(KafkaRecords.Header.sourceOffset).flatMap({ Int64(String(decoding: $0, as: UTF8.self)) })
                else { return false }
                return read.range.contains(source)
            }
            guard let value = message.value, let record = try? RecordCodec.decode(value),
                  let stem = PartitionReplay.stem(ofOutput: message, id: record.id) else { return false }
            return stems.contains(String(stem))
        }
        for message in recordedOutputs {
            if message.topic == topics.deadLetter { deadLetters.append(message) } else { outputs.append(message) }
        }
        let recorded = RecordedRange(
            outputs: outputs, deadLetters: deadLetters, history: rerun.rangeHistory, range: read.range,
            stems: replayed.stems, topics: topics, user: user)
        let mine = { (record: ComparedRecord) in user == nil || record.userId == user }
        let verdict: Verdict
        if request.candidate != nil {
            let replayedRecords = replayed.records.filter { user == nil || $0.userId == user }
            verdict = .whatIf(WhatIfSummary(recorded: recorded.records, replayed: replayedRecords, intentTypes: read.intentTypes))
        } else {
            // Each recorded history record is rebuilt in its own form and slot: a per-unit image
            // from the re-fold's changes in its unit, a change record (the builds before, or
            // FLEET_STATE_IMAGES=json) from the change at its input.
            let history = replayed.history(for: recorded.historyPlaces, covered: rerun.covered, range: read.range, topics: topics)
            verdict = .comparison(ReplayComparison(
                recorded: recorded.outputs + recorded.history,
                replayed: replayed.outputs.filter(mine) + history.filter(mine)))
        }
        return Report(
            topics: topics, range: read.range, recordsReplayed: read.rangeLog.count, verdict: verdict,
            replayedOutputs: replayed.outputs.filter(mine))
    }

    /// What the re-run read and produced.
    private struct RerunResult: Sendable {
        var read: RangeReader.Read
        var replayed: ReplayedRange
        /// The recorded history records of the range's records.
        var rangeHistory: [KafkaMessage]
        /// Which changes (user, input offset) of the range the recorded history covers.
        var covered: Set<UserOffset>
    }

    /// Rebuilds the fold and re-runs the range with whichever processor the worker runs,
    /// streaming, in two passes over the history:
    /// 1. the records' places only (no image decoded): where the re-fold must begin
    ///    (`RefoldBase`: the earliest start of a commit unit spanning `--from`), and which
    ///    changes of the range the history covers;
    /// 2. the images, through `StartState.Builder` at that base (per user only the images that
    ///    matter, kept encoded), with the changelog.
    /// Then the log is read from the nearest checkpoint (the last history record or position
    /// record) before the base, not from its beginning: records before the base only move the
    /// log time, records from the base to `--from` are re-folded without being compared, and
    /// only the range's records are kept. Only the states of the users the re-fold can touch
    /// (`RefoldReach`) are decoded into the fold.
    private struct Rerun: WorkerProcessorVisitor {
        let rangeReader: RangeReader
        let partition: Int32
        let bounds: (from: Int64, to: Int64?)
        let given: (ReplayBound, ReplayBound?)
        let limits: RecordLimits

        func visit<P: UserProcessor>(_ processor: P) async throws -> RerunResult {
            let topics = rangeReader.topics
            let inRange = { (offset: Int64) in offset >= bounds.from && (bounds.to.map { offset < $0 } ?? true) }
            var base = RefoldBase(start: bounds.from)
            var covered = Set<UserOffset>()
            var historyBegins: Int64?
            try await rangeReader.stream(topics.history, partition: partition) { message in
                if historyBegins == nil { historyBegins = message.offset }
                // A migrated generation's history starts with copies of the previous one's (header
                // `fleet-copied-from`), whose input offsets are the previous log's: not this log's.
                guard message.header(StateRekeying.copiedFromHeader) == nil else { return }
                let place: ChangelogRecords.HistoryPlace
                do {
                    place = try ChangelogRecords.historyPlace(of: message)
                } catch {
                    throw ReplayError("\(error)")
                }
                base.add(place)
                for offset in place.changed where inRange(offset) { covered.insert(UserOffset(userId: place.userId, offset: offset)) }
            }

            var builder = StartState<P.State>.Builder(start: base.base, keepingImagesEncoded: true)
            var rangeHistory: [KafkaMessage] = []
            try await rangeReader.stream(topics.history, partition: partition) { message in
                if message.header(StateRekeying.copiedFromHeader) != nil {
                    // The previous generation's last image of a user is its state when the log
                    // was cut: what the migration re-keyed into this generation's changelog.
                    let copy: ChangelogRecords.HistoryEntry<P.State>
                    do {
                        copy = try ChangelogRecords.historyEntry(of: message, as: P.State.self)
                    } catch {
                        throw ReplayError("\(error)")
                    }
                    builder.add(.state(userId: copy.userId, inputOffset: ChangelogRecords.migratedInputOffset, state: copy.after))
                    return
                }
                let change = try HistoryChange<P.State>(message)
                builder.add(change)
                if inRange(change.inputOffset) { rangeHistory.append(message) }
            }
            try await rangeReader.stream(topics.state, partition: partition) { message in
                let entry: ChangelogRecords.Entry<P.State>
                do {
                    entry = try ChangelogRecords.entry(of: message, as: P.State.self)
                } catch {
                    throw ReplayError("\(topics.state): \(error)")
                }
                builder.add(entry)
            }
            let unknown = builder.usersWithoutImage
            if !unknown.isEmpty, let begins = historyBegins, begins > 0,
               let cut = HistoryRetention.cut(
                   firstRead: begins, logStart: try await rangeReader.reader.logStart(of: TopicPartition(topics.history, partition))) {
                throw ReplayError(
                    "\(topics.history)[\(partition)] begins at offset \(cut) (older records were deleted by retention), and no image older than offset \(base.base) of \(topics.folded) is left for \(unknown.count) user(s) the range changes (\(unknown.prefix(3).joined(separator: ", "))\(unknown.count > 3 ? ", ..." : "")): history retention bounds how far back a replay can start; replay a later range")
            }

            let checkpoint = builder.checkpointOffset
            var warmUp: [KafkaMessage] = []
            var rangeLog: [KafkaMessage] = []
            var reach = RefoldReach()
            let start = checkpoint.map { min($0 + 1, base.base) }
            let next = try await rangeReader.streamLog(partition: partition, start: start, stop: bounds.to) { message in
                if message.offset < base.base {
                    builder.add(StartState<P.State>.LogPoint(
                        offset: message.offset, timestamp: message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)),
                        decodes: (try? KafkaRecords.decode(message, limits: limits)) != nil))
                    return
                }
                if message.offset < bounds.from {
                    warmUp.append(message)
                } else {
                    rangeLog.append(message)
                }
                reach.add(message, limits: limits)
            }
            let range = try ReplayRange.checked(partition: partition, from: bounds.from, to: bounds.to ?? next ?? bounds.from, given: given)
            let read = RangeReader.Read(range: range, rangeLog: rangeLog.filter { range.contains($0.offset) })
            // Only the users the re-fold can touch are decoded: those of its records, and those
            // whose timer falls due by the latest time it reaches. The others' states cannot
            // change its outputs or history.
            let startState: StartState<P.State>
            let logTime = builder.logTime
            do {
                startState = try builder.state(keeping: { user, state in reach.touches(user, state, logTime: logTime, processor: processor) })
            } catch {
                throw ReplayError("\(topics.history)[\(partition)]: \(error)")
            }
            let replayed = try PartitionReplay.run(
                processor, from: startState, warmUp: warmUp, log: read.rangeLog, topics: topics, limits: limits)
            return RerunResult(read: read, replayed: replayed, rangeHistory: rangeHistory, covered: covered)
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
