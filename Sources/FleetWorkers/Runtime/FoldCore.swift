import Foundation
import FleetModel
import Kafka
import Logging

/// The mutable heart of a worker: one fold per assigned partition of the folded log, the ingest
/// partitions (of every ingest topic), and the open commit unit (DESIGN.md "Runtime").
///
/// An actor, so the compiler proves its state is never shared unsafely. Actor methods can
/// interleave at their `await`s, so `WorkerRuntime` additionally runs every operation under one
/// `AsyncLock`: a batch, a commit, a rebalance step and a restore hand-over each happen whole.
actor FoldCore<P: UserProcessor> {
    /// What a partition of the folded log is doing.
    enum Phase: Equatable {
        /// Waiting for its state; `generation` tells a stale restore result from a current one.
        case restoring(generation: Int)
        case active
    }

    struct FoldPartition {
        var phase: Phase
        var fold: PartitionFold<P>?
        /// The next offset to fold; anything below was folded (or is a re-delivered copy).
        var nextOffset: Int64?
        var lastActivity: ContinuousClock.Instant
        var lastTick: ContinuousClock.Instant?
    }

    /// Partitions to restore, each with the generation it was assigned under; and partitions of
    /// the previous generation's log to start carrying over (after writing their cut, during a
    /// cutover).
    struct RestoreRequest: Sendable {
        var partitions: [Int32: Int]
        var carried: [Int32: Int] = [:]

        var isEmpty: Bool { partitions.isEmpty && carried.isEmpty }
    }

    let processor: P
    let layout: TopicLayout
    let settings: WorkerSettings
    let consumer: KafkaConsumer
    let producer: KafkaProducer
    let observer: (any RuntimeObserver)?
    let health: RuntimeHealth
    let logger: Logger
    let restoreRequests: AsyncStream<RestoreRequest>.Continuation
    /// The co-partitioned count found at start-up.
    let partitionCount: Int
    /// The layout's ingest sources by physical topic (looked up per record).
    private let ingestSources: [String: IngestSource]

    private(set) var folded: [Int32: FoldPartition] = [:]
    /// Assigned partitions of the ingest topics.
    private(set) var ingest: Set<TopicPartition> = []
    /// Partitions of the previous generation's log, by the assignment generation they wait
    /// under (nil once they are carried over).
    private(set) var carried: [Int32: Int?] = [:]
    /// Where records addressed to an inbox go: the registry as last read.
    private(set) var generations: GenerationMap
    /// Set when this layout must not run any more (a partition it would fold was cut by a
    /// migration to a later generation): the runtime restarts on the current registry.
    private(set) var staleLayout: String?
    private var unit = CommitUnit<[UInt8]>()
    /// Per user, the encoded state last written in this unit: the next change's `before` image
    /// (`FLEET_STATE_IMAGES=json`, which writes a change record per state change).
    private var encodedInUnit: [Int32: [String: [UInt8]]] = [:]
    private var generation = 0
    /// Topics not processed because their partition count changed, with the operator message.
    private(set) var mismatches: [String: String] = [:]
    /// Offsets this member committed last, per partition: the base of its lag figures.
    private var committedOffsets: [TopicPartition: Int64] = [:]
    /// False until the group gave this member its first assignment (possibly empty: more
    /// members than partitions), or a grace period passed.
    private var joined = false
    /// Set when the worker must stop (a fatal or fencing error seen outside the main loop).
    private(set) var fatal: WorkerStopped?
    /// Folds of partitions revoked in an orderly way (their unit committed), with the offset
    /// they reached. The range assignor is eager: every rebalance revokes every partition and
    /// assigns the new set, mostly the same partitions again; a parked fold is installed again
    /// instead of restoring when its partition's committed offset is still the one it reached
    /// (nobody folded it meanwhile), so a rebalance restores only the partitions that moved.
    private var parked: [Int32: (fold: PartitionFold<P>, nextOffset: Int64?)] = [:]
    /// Commit units produced so far, counted for `FLEET_CRASH_DRILL_AFTER_UNITS`.
    private var producedUnits = 0

    init(
        processor: P, layout: TopicLayout, settings: WorkerSettings, consumer: KafkaConsumer, producer: KafkaProducer,
        observer: (any RuntimeObserver)?, health: RuntimeHealth, logger: Logger, restoreRequests: AsyncStream<RestoreRequest>.Continuation,
        partitionCount: Int, generations: GenerationMap
    ) {
        self.processor = processor
        self.layout = layout
        self.settings = settings
        self.consumer = consumer
        self.producer = producer
        self.observer = observer
        self.health = health
        self.logger = logger
        self.restoreRequests = restoreRequests
        self.partitionCount = partitionCount
        self.generations = generations
        self.ingestSources = layout.ingestSources
    }

    // MARK: Assignment

    /// New partitions: folded ones wait paused for their state, ingest ones start at once.
    func assigned(_ partitions: [TopicPartition]) {
        joined = true
        var request = RestoreRequest(partitions: [:])
        let coPartitioned = Set(layout.coPartitioned.map(layout.namespace.physical))
        for partition in partitions {
            if coPartitioned.contains(partition.topic), partition.partition >= Int32(partitionCount) {
                let message = "topic \(partition.topic): partition \(partition.partition) appeared beyond the \(partitionCount) found at start-up; processing of it stopped (no silent reshuffle: migrate with `fleetctl partitions migrate`)"
                if mismatches[partition.topic] == nil { logger.error("\(message)") }
                mismatches[partition.topic] = message
                observer?.partitionCountMismatch(topic: partition.topic, active: true)
            }
            if partition.topic == layout.foldedTopic {
                generation += 1
                folded[partition.partition] = FoldPartition(
                    phase: .restoring(generation: generation), fold: nil, nextOffset: nil, lastActivity: .now)
                request.partitions[partition.partition] = generation
            } else if ingestSources[partition.topic] != nil {
                ingest.insert(partition)
            } else if partition.topic == layout.carriedTopic {
                generation += 1
                carried[partition.partition] = generation
                request.carried[partition.partition] = generation
            }
        }
        // Parked folds of partitions this assignment does not give back have moved away.
        parked = parked.filter { request.partitions[$0.key] != nil }
        reportRestoring()
        if !request.isEmpty { restoreRequests.yield(request) }
    }

    /// Partitions leaving in an orderly way: their work so far is committed first, and their
    /// folds are parked in case the next assignment gives them straight back.
    func revoked(_ partitions: [TopicPartition]) async throws(WorkerStopped) {
        try await commit()
        for partition in partitions where partition.topic == layout.foldedTopic {
            // A failed commit rewound every fold (phase restoring, no fold): nothing to park.
            guard let entry = folded[partition.partition], entry.phase == .active, let fold = entry.fold else { continue }
            parked[partition.partition] = (fold, entry.nextOffset)
        }
        forget(partitions)
    }

    /// The partitions of `request` whose parked fold is current — the committed offset is the
    /// one the fold reached when this member committed it on revocation, so nobody folded the
    /// partition since and the changelog would restore exactly this state — are installed
    /// again, sought to that offset and resumed without reading the changelog. Returns what is
    /// left to restore.
    func resumeParked(_ request: RestoreRequest, committed: [Int32: Int64]) async -> RestoreRequest {
        var rest = request
        var seeks: [TopicPartition: Int64] = [:]
        for (partition, generation) in request.partitions {
            guard folded[partition]?.phase == .restoring(generation: generation),
                  let kept = parked.removeValue(forKey: partition)
            else { continue }
            guard kept.nextOffset == committed[partition] else {
                logger.info("parked fold is stale; restoring", metadata: [
                    "partition": "\(layout.foldedTopic)[\(partition)]",
                    "parked_offset": "\(kept.nextOffset.map(String.init) ?? "none")",
                    "committed_offset": "\(committed[partition].map(String.init) ?? "none")",
                ])
                continue
            }
            folded[partition] = FoldPartition(phase: .active, fold: kept.fold, nextOffset: committed[partition], lastActivity: .now)
            seeks[TopicPartition(layout.foldedTopic, partition)] = committed[partition] ?? KafkaConsumer.beginning
            if let offset = committed[partition] { committedOffsets[TopicPartition(layout.foldedTopic, partition)] = offset }
            rest.partitions[partition] = nil
        }
        guard !seeks.isEmpty else { return rest }
        logger.info("partitions kept through the rebalance: no restore", metadata: [
            "partitions": "\(seeks.keys.map(\.partition).sorted())", "topic": "\(layout.foldedTopic)",
        ])
        guard await seekAndResume(seeks, what: "kept partitions") else { return RestoreRequest(partitions: [:]) }
        reportRestoring()
        return rest
    }

    /// Partitions already taken away: their uncommitted work cannot be committed any more. The
    /// open unit mixes their work with the others', so it is discarded whole and every remaining
    /// partition rewinds to its committed offset and state.
    func lost(_ partitions: [TopicPartition]) async {
        forget(partitions)
        await rewindAll(reason: "partitions \(partitions.map(\.description).joined(separator: ",")) were lost")
    }

    private func forget(_ partitions: [TopicPartition]) {
        for partition in partitions {
            if partition.topic == layout.foldedTopic {
                folded[partition.partition] = nil
                encodedInUnit[partition.partition] = nil
            } else if ingestSources[partition.topic] != nil {
                ingest.remove(partition)
            } else if partition.topic == layout.carriedTopic {
                carried[partition.partition] = nil
            }
            committedOffsets[partition] = nil
            observer?.clearLag(topic: settings.topics.logical(partition.topic) ?? partition.topic, partition: Int(partition.partition))
        }
        unit.drop(Set(partitions), foldedTopic: layout.foldedTopic)
        reportRestoring()
    }

    /// Throws away the open unit and puts every partition back where the last commit left it:
    /// folded partitions pause and restore their state, ingest partitions seek to their
    /// committed offsets. What the unit held will be processed again, identically.
    func rewindAll(reason: String) async {
        logger.warning("rewinding to the committed offsets and state", metadata: ["reason": "\(reason)"])
        parked = [:]
        unit = CommitUnit()
        encodedInUnit = [:]
        var request = RestoreRequest(partitions: [:])
        var pause: [TopicPartition] = []
        for partition in folded.keys.sorted() {
            generation += 1
            folded[partition]?.phase = .restoring(generation: generation)
            folded[partition]?.fold = nil
            request.partitions[partition] = generation
            pause.append(TopicPartition(layout.foldedTopic, partition))
        }
        do {
            try consumer.pause(pause)
        } catch {
            logger.error("pause for rewind failed", metadata: ["error": "\(error)"])
        }
        var sources: [TopicPartition] = []
        sources += ingest.sorted(by: Self.sourceOrder)
        if let carriedTopic = layout.carriedTopic {
            sources += carried.filter { $0.value == nil }.keys.sorted().map { TopicPartition(carriedTopic, $0) }
        }
        if !sources.isEmpty {
            let partitions = sources
            do {
                let committed = try await consumer.committed(partitions)
                var targets: [TopicPartition: Int64] = [:]
                for partition in partitions { targets[partition] = committed[partition] ?? KafkaConsumer.beginning }
                try await consumer.seek(targets)
            } catch {
                // Without a seek the ingest stage would skip the discarded unit's records: stop.
                fatal = WorkerStopped(description: "could not rewind \(partitions) after \(reason): \(error)")
            }
        }
        reportRestoring()
        if !request.partitions.isEmpty { restoreRequests.yield(request) }
    }

    /// Installs restored states for partitions still waiting under the same generation, moves
    /// them to their committed offsets and resumes them. Results for partitions revoked or
    /// re-requested meanwhile are dropped.
    func finishRestore(
        _ restored: [Int32: StateRestorer<P.State>.Restored], committed: [Int32: Int64], request: RestoreRequest
    ) async {
        var seeks: [TopicPartition: Int64] = [:]
        for (partition, generation) in request.partitions {
            guard let current = folded[partition], current.phase == .restoring(generation: generation),
                  let result = restored[partition]
            else { continue }
            if let cut = result.cut, cut.generation > layout.entry.generation {
                let message = "\(layout.foldedTopic)[\(partition)] was cut at offset \(cut.committedOffset) by the migration to generation \(cut.generation); restarting on the current generation registry"
                logger.notice("\(message)")
                staleLayout = message
                continue
            }
            let fold = PartitionFold(
                processor: processor, restoring: result.states, holding: result.held,
                decode: { image throws(StateImageError) in try StateCoding.decode(image, as: P.State.self) }, logTime: result.logTime)
            folded[partition] = FoldPartition(
                phase: .active, fold: fold, nextOffset: committed[partition], lastActivity: .now)
            seeks[TopicPartition(layout.foldedTopic, partition)] = committed[partition] ?? KafkaConsumer.beginning
            if let offset = committed[partition] { committedOffsets[TopicPartition(layout.foldedTopic, partition)] = offset }
            observer?.restoredStates(count: result.userCount)
            let seconds = RuntimeClock.seconds(result.duration)
            if seconds > 0 { observer?.restoreRate(statesPerSecond: Double(result.userCount) / seconds) }
            logger.info("partition restored", metadata: [
                "partition": "\(layout.foldedTopic)[\(partition)]", "states": "\(result.userCount)",
                "held_undecoded": "\(result.held.count)", "sized_for": "\(result.sizedFor.map(String.init) ?? "none")",
                "changelog_records": "\(result.recordsRead)", "committed_offset": "\(committed[partition].map(String.init) ?? "none")",
                "log_time": "\(result.logTime?.description ?? "none")", "seconds": "\(LogValues.seconds(seconds))",
            ])
        }
        guard !seeks.isEmpty else { return }
        if await seekAndResume(seeks, what: "restored partitions") { reportRestoring() }
    }

    /// Moves `seeks`' partitions to their offsets and resumes them. On failure every partition
    /// rewinds (restores again from the committed state): a partition left paused or at the
    /// wrong offset would stall or skip records. Says whether it succeeded.
    private func seekAndResume(_ seeks: [TopicPartition: Int64], what: String) async -> Bool {
        do {
            try await consumer.seek(seeks)
            try consumer.resume(Array(seeks.keys))
            return true
        } catch {
            logger.error("resume of \(what) failed; rewinding", metadata: ["error": "\(error)"])
            await rewindAll(reason: "resume of \(what) failed: \(error)")
            return false
        }
    }

    /// Starts carrying over the previous generation's partitions that still wait under the
    /// same assignment generation, from their committed offsets.
    func finishCarry(committed: [Int32: Int64], request: RestoreRequest) async {
        guard let carriedTopic = layout.carriedTopic else { return }
        var seeks: [TopicPartition: Int64] = [:]
        for (partition, generation) in request.carried where carried[partition] == .some(generation) {
            carried[partition] = .some(nil)
            seeks[TopicPartition(carriedTopic, partition)] = committed[partition] ?? KafkaConsumer.beginning
        }
        guard !seeks.isEmpty else { return }
        logger.info("carrying over the previous generation's log", metadata: [
            "from": "\(seeks.keys.sorted().map(\.description))", "into": "\(layout.foldedTopic)",
        ])
        if await seekAndResume(seeks, what: "carried partitions") { reportRestoring() }
    }

    /// Partitions whose restore failed are requested again.
    func retryRestore(_ request: RestoreRequest) {
        let still = request.partitions.filter { folded[$0.key]?.phase == .restoring(generation: $0.value) }
        let carriedStill = request.carried.filter { carried[$0.key] == .some($0.value) }
        let again = RestoreRequest(partitions: still, carried: carriedStill)
        if !again.isEmpty { restoreRequests.yield(again) }
    }

    /// Records addressed to inboxes go where `map` says from the next unit on; the caller
    /// commits the open unit first.
    func route(_ map: GenerationMap) {
        generations = map
    }

    func reportRestoring() {
        let restoring = folded.values.filter { $0.phase != .active }.count
        observer?.restoring(partitions: restoring)
        observer?.foldedPartitions(folded.count)
        observer?.ready(joined && restoring == 0 && mismatches.isEmpty && fatal == nil)
        health.update(notReady: notReadyReasons(), folding: foldingLine())
    }

    /// Which user partitions this member folds, for `/readyz`.
    func foldingLine() -> String? {
        guard joined, layout.folds else { return nil }
        let partitions = folded.keys.sorted()
        return "folds \(layout.foldedTopic) partitions [\(partitions.map(String.init).joined(separator: ","))] (\(partitions.count) of \(partitionCount))"
    }

    // MARK: Processing

    /// Folds or forwards one batch into the open unit.
    func process(_ batch: [KafkaMessage]) {
        let now = ContinuousClock.now
        var inCounts: [String: Int] = [:]
        let namespace = settings.topics
        for message in batch {
            if mismatches[message.topic] != nil { continue }
            if message.topic == layout.foldedTopic {
                guard fold(message, namespace: namespace, now: now) else { continue }
            } else if let source = ingestSources[message.topic] {
                guard ingest.contains(message.topicPartition) else { continue }
                forward(message, from: source, namespace: namespace)
            } else if message.topic == layout.carriedTopic {
                guard carried[message.partition] == .some(nil) else { continue }
                carryOver(message, namespace: namespace)
            } else {
                continue
            }
            inCounts[namespace.logical(message.topic) ?? message.topic, default: 0] += 1
            unit.offsets[message.topicPartition] = message.offset + 1
            unit.touch(at: now)
        }
        for (topic, count) in inCounts { observer?.recordIn(topic: topic, count: count) }
    }

    /// Folds one record of the folded log; false when the partition is not ours to fold now
    /// (restoring, revoked) or the record was folded already.
    private func fold(_ physical: KafkaMessage, namespace: TopicNamespace, now: ContinuousClock.Instant) -> Bool {
        let partition = physical.partition
        guard var entry = folded[partition], entry.phase == .active, entry.fold != nil else { return false }
        if let next = entry.nextOffset, physical.offset < next { return false }
        // Take the fold out of the table and out of `entry` while it mutates: a copy left in
        // either shares the fold's storage, and then every state update copied the partition's
        // whole state dictionary and timer index (quadratic in users: 2 000 records/s).
        folded[partition]?.fold = nil
        guard var fold = entry.fold.take() else { return false }
        defer {
            entry.fold = fold
            entry.nextOffset = physical.offset + 1
            entry.lastActivity = now
            folded[partition] = entry
        }

        var message = physical
        message.topic = namespace.logical(physical.topic) ?? physical.topic
        let cause = InputPosition(partition: physical.topicPartition, offset: physical.offset)
        if unit.unitStarts[partition] == nil { unit.unitStarts[partition] = physical.offset }
        if !quarantined.isEmpty, let quarantine = quarantined[cause] {
            // Its outputs failed to produce again and again: dead-lettered as it is, the fold
            // untouched (as for a record that does not decode), so the partition goes on.
            deadLetter(message, error: quarantine.error, namespace: namespace, cause: cause, quarantinedAfter: quarantine.attempts)
            return true
        }
        let wakeUp = fold.nextWakeUp
        let logTimeBefore = fold.logTime
        let folded = LogFolding.fold(message, into: &fold, limits: settings.limits, images: settings.stateImages)
        if let error = folded.deadLetter { deadLetter(message, error: error, namespace: namespace, cause: cause) }
        guard let step = folded.step else { return true }
        for failure in step.undecodable {
            logger.error("a timer was dropped: the user's state restored from the changelog does not decode", metadata: [
                "partition": "\(physical.topicPartition)", "user": "\(RecordError.quote(failure.userId))", "error": "\(failure.error)",
            ])
        }
        if let failure = folded.stateEncodingError {
            fatal = WorkerStopped(description: failure)
            return true
        }
        let timestamp = folded.timestamp
        if let wakeUp, wakeUp <= timestamp {
            observer?.timerLateness(seconds: Double(timestamp.millisecondsSinceEpoch - wakeUp.millisecondsSinceEpoch) / 1000)
        }
        emit(
            step.outputs, values: folded.outputValues, origin: folded.origin, originIndex: folded.originIndex, recordTimestamp: message.timestamp, namespace: namespace, cause: cause)

        let input = KafkaRecords.coordinates(message)
        let logTime = fold.logTime ?? timestamp
        for (change, after) in zip(step.changes, folded.stateImages) {
            let wakeUp = P.nextWakeUpDependsOnStateAlone ? processor.nextWakeUp(change.after) : nil
            unit.states[partition, default: [:]][change.userId] = (after, physical.offset, wakeUp)
            switch settings.stateImages {
            case .binary:
                // One history image per changed user per unit, written with the unit (`commit`).
                unit.changes[partition, default: [:]][change.userId, default: UnitChanges(logTime: logTime)]
                    .record(physical.offset, logTime: logTime)
            case .json:
                // What the builds before binary images wrote, so a rollback to them loses nothing:
                // a change record per state change, with its before-image.
                let before: [UInt8]?
                if let cached = encodedInUnit[partition]?[change.userId] {
                    before = cached
                } else {
                    do {
                        before = try change.before.map { try StateCoding.encode($0, as: .json) }
                    } catch {
                        fatal = WorkerStopped(description: "cannot encode the state of user \(change.userId): \(error)")
                        continue
                    }
                }
                encodedInUnit[partition, default: [:]][change.userId] = after
                unit.append(ChangelogRecords.change(
                    userId: change.userId, before: before, after: after, input: input, logTime: logTime,
                    topic: layout.historyTopic, partition: partition), cause: cause)
            }
        }
        if fold.logTime != logTimeBefore, let time = fold.logTime {
            unit.positions[partition] = (physical.offset, time, fold.userCount)
        }
        return true
    }

    /// The ingest stage: validates an external record and forwards it into the inbox, keyed by
    /// user, with its timestamp and source coordinates; a bad one goes to `<topic>.dlq`. A
    /// source read for some types only (`IngestSource.only`) skips the others, and leaves
    /// records that do not decode to the worker whose input the topic is.
    private func forward(_ physical: KafkaMessage, from source: IngestSource, namespace: TopicNamespace) {
        forward(physical, to: generations.route(layout.worker.foldedTopic), namespace: namespace, source: source)
    }

    /// A record of the previous generation's log, carried over into this generation's with its
    /// origin (ids unchanged). Ticks stay behind: they only moved the old partition's time, and
    /// the new log gets its own. A record the old fold would have dead-lettered goes to the dead
    /// letters here, as it would have there.
    private func carryOver(_ physical: KafkaMessage, namespace: TopicNamespace) {
        forward(physical, to: layout.topics.log, namespace: namespace, keepingTicks: false)
    }

    /// Validates `physical` and copies it into the log `log` (logical) with its origin, or
    /// dead-letters it.
    private func forward(
        _ physical: KafkaMessage, to log: String, namespace: TopicNamespace, keepingTicks: Bool = true, source: IngestSource? = nil
    ) {
        var message = physical
        message.topic = namespace.logical(physical.topic) ?? physical.topic
        let cause = InputPosition(partition: physical.topicPartition, offset: physical.offset)
        if !quarantined.isEmpty, let quarantine = quarantined[cause] {
            deadLetter(message, error: quarantine.error, namespace: namespace, cause: cause, quarantinedAfter: quarantine.attempts)
            return
        }
        let record: FleetRecord
        do {
            record = try KafkaRecords.decode(message, limits: settings.limits)
        } catch {
            if source?.only == nil { deadLetter(message, error: error, namespace: namespace, cause: cause) }
            return
        }
        if !keepingTicks, case .tick = record { return }
        if let source, !source.forwards(record.type) { return }
        unit.append(KafkaRecords.forward(message, to: log, in: namespace), cause: cause)
        observer?.recordOut(topic: log, count: 1)
    }

    private func emit(
        _ outputs: [OutputRecord], values: [[UInt8]], origin: SourceCoordinates, originIndex: Int?, recordTimestamp: Int64?,
        namespace: TopicNamespace, cause: InputPosition
    ) {
        for (index, (output, value)) in zip(outputs, values).enumerated() {
            // Records for an inbox go to the generation its owner currently takes writes in.
            var routed = output
            routed.topic = generations.route(output.topic)
            unit.append(LogFolding.producerRecord(
                for: routed, value: value, index: index, of: origin, originIndex: originIndex, in: namespace), cause: cause)
            observer?.recordOut(topic: output.topic, count: 1)
            switch output.record {
            case .decision(let decision):
                observer?.decision(outcome: decision.outcome, reason: decision.reason, rule: decision.rule)
            case .delivery(let delivery):
                observer?.delivery(category: delivery.category, channel: delivery.channel)
                if delivery.category.uppercased() == "SECURITY", let arrived = recordTimestamp {
                    let wall = RuntimeClock.wallClock().millisecondsSinceEpoch
                    observer?.securityDeliveryLatency(seconds: Double(max(0, wall - arrived)) / 1000)
                }
            default:
                break
            }
        }
    }

    /// `quarantinedAfter`: the input is dead-lettered because its records failed to produce
    /// that many times; it is then always carried by reference (the smallest dead letter
    /// there is), since the broker may have refused the value itself.
    private func deadLetter(
        _ message: KafkaMessage, error: RecordError, namespace: TopicNamespace, cause: InputPosition, quarantinedAfter: Int? = nil
    ) {
        logger.warning("dead-lettered", metadata: [
            "source": "\(message.topic)[\(message.partition)]@\(message.offset)", "error": "\(error.message)",
            "bytes": "\((message.key?.count ?? 0) + (message.value?.count ?? 0))",
        ])
        var limits = settings.limits
        var extra: [KafkaHeader] = []
        if let quarantinedAfter {
            limits.maxRecordBytes = 0
            extra = [KafkaHeader(KafkaRecords.Header.quarantined, String(quarantinedAfter))]
        }
        unit.append(KafkaRecords.deadLetter(message, error: error, in: namespace, limits: limits, extraHeaders: extra), cause: cause)
        observer?.deadLetter(topic: message.topic)
        observer?.recordOut(topic: Topics.deadLetter(of: message.topic), count: 1)
    }

    // MARK: Ticks

    /// Appends a `tick` to every idle inbox partition with a due timer (DESIGN.md "Time"): the
    /// tick is read back like any record, so timers fire from the log, never from a clock.
    /// Stamped with the wall clock; in production the inbox's LogAppendTime replaces it with the
    /// broker's.
    func writeTicks(interval: Duration, wallClock: Timestamp, now: ContinuousClock.Instant) {
        guard layout.worker.ownsItsLog else { return }
        for (partition, entry) in folded where entry.phase == .active {
            guard now - entry.lastActivity >= interval,
                  let wakeUp = entry.fold?.nextWakeUp, wakeUp <= wallClock
            else { continue }
            if let last = entry.lastTick, now - last < interval { continue }
            let tick = Tick(id: "\(layout.topics.log):\(partition):tick:\(wallClock.millisecondsSinceEpoch)")
            unit.append(ProducerRecord(
                topic: layout.foldedTopic, partition: partition, key: nil, value: RecordCodec.encode(.tick(tick)),
                timestamp: wallClock.millisecondsSinceEpoch), cause: nil)
            unit.touch(at: now)
            folded[partition]?.lastTick = now
            observer?.tickWritten()
            observer?.recordOut(topic: layout.topics.log, count: 1)
        }
    }

    // MARK: Commit

    /// Whether the open unit has collected for a commit interval.
    func isDue(now: ContinuousClock.Instant) -> Bool {
        guard let opened = unit.openedAt else { return false }
        return now - opened >= settings.commitInterval || unit.records.count >= 50_000
    }

    /// Commits the open unit (DESIGN.md principle 4). A failure that leaves the unit
    /// uncommitted rewinds every partition to its committed offsets and state; a fatal or
    /// fencing error throws `WorkerStopped`.
    func commit() async throws(WorkerStopped) {
        if let fatal { throw fatal }
        guard !unit.isEmpty else { return }
        var records = unit.records
        var causes = unit.causes
        for (partition, users) in unit.states.sorted(by: { $0.key < $1.key }) {
            for (user, entry) in users.sorted(by: { $0.key < $1.key }) {
                records.append(ChangelogRecords.state(
                    userId: user, image: entry.state, inputOffset: entry.inputOffset,
                    wakeUp: P.nextWakeUpDependsOnStateAlone ? .recorded(entry.wakeUp) : .unrecorded,
                    topic: layout.stateTopic, partition: partition))
                causes.append(InputPosition(partition: TopicPartition(layout.foldedTopic, partition), offset: entry.inputOffset))
            }
        }
        for (partition, users) in unit.changes.sorted(by: { $0.key < $1.key }) {
            guard let unitStart = unit.unitStarts[partition], let images = unit.states[partition] else { continue }
            for (user, changes) in users.sorted(by: { $0.key < $1.key }) {
                guard let image = images[user], let last = changes.offsets.last else { continue }
                records.append(ChangelogRecords.historyImage(
                    userId: user, after: image.state, unitStart: unitStart, changed: changes.offsets, logTime: changes.logTime,
                    inputTopic: layout.topics.log, topic: layout.historyTopic, partition: partition))
                causes.append(InputPosition(partition: TopicPartition(layout.foldedTopic, partition), offset: last))
            }
        }
        for (partition, position) in unit.positions.sorted(by: { $0.key < $1.key }) {
            records.append(ChangelogRecords.position(
                logTime: position.logTime, inputOffset: position.inputOffset, users: position.users, topic: layout.stateTopic,
                partition: partition))
            causes.append(nil)
        }
        let offsets = unit.offsets
        let started = ContinuousClock.now
        switch settings.guarantee {
        case .exactlyOnce:
            do {
                try producer.beginTransaction()
                _ = try await producer.send(records)
                crashDrill()
                if !offsets.isEmpty {
                    try await producer.sendOffsetsToTransaction(offsets, groupMetadata: consumer.groupMetadata())
                }
                try await commitTransaction()
            } catch {
                if error.isFatal || error.isFenced {
                    throw WorkerStopped(description: "the transactional producer cannot go on: \(error)")
                }
                do {
                    try await producer.abortTransaction()
                } catch {
                    throw WorkerStopped(description: "aborting the transaction failed: \(error)")
                }
                observer?.commit(result: .aborted)
                await unitFailed(error, causes: causes, what: "the transaction was aborted")
                return
            }
        case .atLeastOnce:
            do {
                _ = try await producer.send(records)
            } catch {
                observer?.commit(result: .aborted)
                await unitFailed(error, causes: causes, what: "producing the unit failed")
                return
            }
            crashDrill()
            do {
                try await consumer.commit(offsets)
            } catch {
                // The outputs are out; whoever owns these partitions next repeats the tail as
                // exact copies with the same ids. Keep going: the next commit covers it.
                logger.warning("offset commit failed", metadata: ["error": "\(error)"])
            }
        }
        let elapsed = ContinuousClock.now - started
        observer?.commitLatency(RuntimeClock.seconds(elapsed), guarantee: settings.guarantee)
        observer?.commit(result: .committed)
        // Outputs, forwards, ticks and dead letters were counted as they were made; the
        // changelog and history records are counted here, without copying the unit.
        var stateRecords = 0, historyRecords = 0
        for record in records {
            if record.topic == layout.stateTopic { stateRecords += 1 } else if record.topic == layout.historyTopic { historyRecords += 1 }
        }
        observer?.recordOut(topic: layout.topics.state, count: stateRecords)
        observer?.recordOut(topic: layout.topics.history, count: historyRecords)
        committedOffsets.merge(offsets) { _, new in new }
        unit = CommitUnit()
        encodedInUnit = [:]
        unitSucceeded(committed: offsets)
    }

    // MARK: Failed units

    /// An input whose records the broker refused `attempts` times: from now on it is
    /// dead-lettered instead of folded or forwarded.
    struct Quarantine: Sendable {
        var error: RecordError
        var attempts: Int
    }

    /// Inputs to dead-letter instead of processing (kept across rewinds, dropped once committed
    /// past).
    private(set) var quarantined: [InputPosition: Quarantine] = [:]
    /// Per input, how many units in a row failed on a record it caused.
    private var failedAttempts: [InputPosition: Int] = [:]
    /// Units that failed since the last successful commit.
    private(set) var consecutiveFailures = 0
    /// The last failure, for readiness and logs.
    private var lastFailure: (error: String, input: InputPosition?)?

    /// A unit did not commit. Rewinds every partition to its committed offsets and state (the
    /// unit is redone identically) — but never silently in circles (DESIGN.md principle 7):
    ///
    /// - when the broker refused one record for what it is (`KafkaError.isRecordSpecific`:
    ///   size, format), the input that caused it is named in the log and the metrics, and after
    ///   `FLEET_POISON_ATTEMPTS` such failures it is quarantined: dead-lettered (by reference,
    ///   with a `quarantined-after` header) instead of processed, so the partition goes on;
    /// - from the third failed unit in a row `/readyz` says why, and from `FLEET_STALL_UNITS`
    ///   on `/healthz` fails, so Kubernetes stops routing to or restarts a worker that cannot
    ///   make progress.
    private func unitFailed(_ error: KafkaError, causes: [InputPosition?], what: String) async {
        consecutiveFailures += 1
        observer?.unitFailures(consecutive: consecutiveFailures)
        var blamed: InputPosition?
        if error.isRecordSpecific, let index = error.recordIndex, causes.indices.contains(index) { blamed = causes[index] }
        lastFailure = ("\(what): \(error)", blamed)
        if let blamed {
            let attempts = (failedAttempts[blamed] ?? 0) + 1
            failedAttempts[blamed] = attempts
            let logical = settings.topics.logical(blamed.partition.topic) ?? blamed.partition.topic
            observer?.failingInput(topic: logical, partition: Int(blamed.partition.partition), offset: blamed.offset)
            if attempts >= settings.poisonAttempts {
                failedAttempts[blamed] = nil
                quarantined[blamed] = Quarantine(
                    error: RecordError(
                        "the broker refused a record it caused \(attempts) times (\(error.name): \(error.message)); dead-lettered so the partition goes on (FLEET_POISON_ATTEMPTS)"),
                    attempts: attempts)
                observer?.inputQuarantined(topic: logical)
                logger.error("input quarantined: it will be dead-lettered instead of processed", metadata: [
                    "input": "\(logical)[\(blamed.partition.partition)]@\(blamed.offset)", "attempts": "\(attempts)",
                    "error": "\(error)",
                ])
            } else {
                logger.error("unit failed on a record one input caused; retrying", metadata: [
                    "input": "\(logical)[\(blamed.partition.partition)]@\(blamed.offset)", "attempt": "\(attempts)",
                    "of": "\(settings.poisonAttempts)", "error": "\(error)",
                ])
            }
        } else {
            logger.error("unit failed; retrying", metadata: [
                "consecutive_failures": "\(consecutiveFailures)", "error": "\(error)",
            ])
        }
        if consecutiveFailures >= settings.stallUnits {
            health.stall("\(consecutiveFailures) commit units in a row failed (FLEET_STALL_UNITS=\(settings.stallUnits)); latest: \(what): \(error)")
        }
        await rewindAll(reason: "\(what): \(error)")
    }

    /// A unit committed: the failure streak ends, and quarantined inputs it committed past are
    /// forgotten (they were dead-lettered in it).
    private func unitSucceeded(committed offsets: [TopicPartition: Int64]) {
        if consecutiveFailures > 0 || lastFailure != nil {
            consecutiveFailures = 0
            lastFailure = nil
            failedAttempts = [:]
            observer?.unitFailures(consecutive: 0)
            observer?.failingInputCleared()
            health.stall(nil)
            reportRestoring()
        }
        if !quarantined.isEmpty {
            quarantined = quarantined.filter { input, _ in
                guard let next = offsets[input.partition] else { return true }
                return input.offset >= next
            }
        }
    }

    /// The crash drill (`FLEET_CRASH_DRILL_AFTER_UNITS`): dies like a killed pod — no shutdown
    /// hook, nothing flushed or committed — right after the n-th unit's records were acknowledged
    /// and before its offsets (or its transaction) are committed: the window in which a crash
    /// must neither lose nor repeat anything (DESIGN.md principle 4). A timed external kill
    /// rarely lands there when units are small.
    private func crashDrill() {
        guard let after = settings.crashDrillAfterUnits else { return }
        producedUnits += 1
        guard producedUnits == after else { return }
        logger.critical("crash drill: killing this process after producing commit unit \(after), before committing it (FLEET_CRASH_DRILL_AFTER_UNITS)")
        fflush(nil)  // every stdio stream, so the log says why the process died
        kill(getpid(), SIGKILL)
    }

    /// `commit_transaction`, retried while librdkafka says a retry can succeed.
    private func commitTransaction() async throws(KafkaError) {
        var attempt = 0
        while true {
            do {
                try await producer.commitTransaction()
                return
            } catch where error.isRetriable && !error.requiresAbort && attempt < 5 {
                attempt += 1
                logger.warning("transaction commit will be retried", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Health

    /// Ends the wait for a first assignment: a member the group gives nothing is still ready.
    func joinGracePassed() {
        if !joined {
            joined = true
            reportRestoring()
        }
    }

    /// Why the worker is not ready, one line each; empty when ready.
    func notReadyReasons() -> [String] {
        var reasons = joined ? [] : ["joining consumer group \(settings.groupId)"]
        reasons += folded.filter { $0.value.phase != .active }.keys.sorted().map { "restoring \(layout.foldedTopic)[\($0)]" }
        reasons += carried.filter { $0.value != nil }.keys.sorted().map { "cutting \(layout.carriedTopic ?? "")[\($0)]" }
        reasons += mismatches.keys.sorted().compactMap { mismatches[$0] }
        if let staleLayout { reasons.append(staleLayout) }
        if let fatal { reasons.append(fatal.description) }
        if consecutiveFailures >= 3, let lastFailure {
            let input = lastFailure.input.map { " (caused by \($0))" } ?? ""
            reasons.append("the last \(consecutiveFailures) commit units failed\(input); latest: \(lastFailure.error)")
        }
        return reasons
    }

    /// Compares current partition counts with the start-up count; a changed topic stops being
    /// processed (its partitions are paused) until an operator migrates.
    func checkPartitionCounts(_ counts: [String: Int]) {
        let changed = layout.changedCounts(counts, expected: partitionCount)
        for (topic, message) in changed where mismatches[topic] == nil {
            logger.error("\(message)")
            mismatches[topic] = message
            observer?.partitionCountMismatch(topic: topic, active: true)
            let ours: [TopicPartition]
            if topic == layout.foldedTopic {
                ours = folded.keys.map { TopicPartition(topic, $0) }
            } else if ingestSources[topic] != nil {
                ours = ingest.filter { $0.topic == topic }
            } else {
                ours = []
            }
            do { try consumer.pause(ours) } catch { logger.error("pause failed", metadata: ["error": "\(error)"]) }
        }
        reportRestoring()
    }

    /// The partitions whose lag this member reports, each with the input offset it last
    /// committed or restored at (nil before either: the lag reporter asks the group).
    func lagBases() -> [TopicPartition: Int64?] {
        var bases: [TopicPartition: Int64?] = [:]
        var partitions = folded.keys.map { TopicPartition(layout.foldedTopic, $0) }
        partitions += ingest
        if let carriedTopic = layout.carriedTopic { partitions += carried.keys.map { TopicPartition(carriedTopic, $0) } }
        for partition in partitions { bases[partition] = committedOffsets[partition] }
        return bases
    }

    /// Publishes lags measured outside the fold (`WorkerRuntime.reportLag`), skipping
    /// partitions revoked meanwhile: a gauge for a partition this member no longer holds would
    /// never be cleared.
    func publishLag(_ lags: [TopicPartition: Int64]) {
        guard let observer else { return }
        let held = lagBases()
        for (partition, lag) in lags where held.keys.contains(partition) {
            observer.setLag(topic: settings.topics.logical(partition.topic) ?? partition.topic, partition: Int(partition.partition), lag: lag)
        }
    }

    /// Ingest partitions by topic, then partition: the order rewinds seek them in.
    private static func sourceOrder(_ a: TopicPartition, _ b: TopicPartition) -> Bool {
        (a.topic, a.partition) < (b.topic, b.partition)
    }

    func stop(_ error: WorkerStopped) {
        fatal = error
        health.update(notReady: notReadyReasons())
    }
}

/// The worker cannot continue; the message says why (and what to do).
public struct WorkerStopped: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(description: String) { self.description = description }
}
