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
    struct FoldPartition {
        /// What the partition is doing, and what it may do next.
        var lifecycle: PartitionLifecycle
        /// The task folding the partition while it is active (`lifecycle.lane` names it).
        var lane: FoldLane<P>?
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
    let consumer: any LogConsumer
    let producer: any LogProducer
    let observer: (any RuntimeObserver)?
    let health: RuntimeHealth
    let logger: Logger
    let restoreRequests: AsyncStream<RestoreRequest>.Continuation
    /// Where new lanes go to be run (`WorkerRuntime`'s lane group).
    let laneStarts: LaneStarts<P>
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
    /// The open unit's ingest part (forwards, carried records, ticks, their dead letters); each
    /// lane holds its partition's part until the unit is sealed.
    private var unit = CommitUnit()
    /// Records handed to lanes since the last seal (the unit's size as far as the lanes go).
    private var dispatchedSinceSeal = 0
    /// Numbers lanes, so a lane's late call is told from its replacement's.
    private var laneCount = 0
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
    /// A sealed unit on its way to the broker, at most one at a time: its outcome, handed over
    /// by the shipping task.
    private var flight: Handoff<ShipmentOutcome>?
    /// How this run's units go to the broker.
    private let shipment: UnitShipment

    init(
        processor: P, layout: TopicLayout, settings: WorkerSettings, consumer: any LogConsumer, producer: any LogProducer,
        observer: (any RuntimeObserver)?, health: RuntimeHealth, logger: Logger, restoreRequests: AsyncStream<RestoreRequest>.Continuation,
        laneStarts: LaneStarts<P>, partitionCount: Int, generations: GenerationMap
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
        self.laneStarts = laneStarts
        self.partitionCount = partitionCount
        self.generations = generations
        self.ingestSources = layout.ingestSources
        self.shipment = UnitShipment(
            guarantee: settings.guarantee, producer: producer, consumer: consumer, layout: layout, logger: logger,
            crashDrill: settings.crashDrillAfterUnits.map { CrashDrill(after: $0, logger: logger) })
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
                folded[partition.partition]?.lane?.discard()
                let (lifecycle, actions) = PartitionLifecycle.assigned(attempt: generation)
                folded[partition.partition] = FoldPartition(lifecycle: lifecycle, lane: nil, lastActivity: .now)
                for case .restore(let attempt) in actions { request.partitions[partition.partition] = attempt }
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
            // A failed commit rewound every fold (restoring, no lane): nothing to park.
            guard let lane = folded[partition.partition]?.lane,
                  let actions = folded[partition.partition]?.lifecycle.revoke()
            else { continue }
            folded[partition.partition]?.lane = nil
            if actions.contains(.parkFold(lane: lane.id)), let kept = await lane.stop() {
                parked[partition.partition] = kept
            } else {
                lane.discard()
            }
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
            guard folded[partition]?.lifecycle.awaits(attempt: generation) == true,
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
            guard activate(partition, attempt: generation, fold: kept.fold, nextOffset: committed[partition]) else { continue }
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
        await abandonFlight()
        for partition in partitions where partition.topic == layout.foldedTopic {
            guard let actions = folded[partition.partition]?.lifecycle.lose() else { continue }
            for case .discardLane(let id) in actions where folded[partition.partition]?.lane?.id == id {
                folded[partition.partition]?.lane?.discard()
            }
        }
        forget(partitions)
        await rewindAll(reason: "partitions \(partitions.map(\.description).joined(separator: ",")) were lost")
    }

    private func forget(_ partitions: [TopicPartition]) {
        for partition in partitions {
            if partition.topic == layout.foldedTopic {
                folded[partition.partition]?.lane?.discard()
                folded[partition.partition] = nil
            } else if ingestSources[partition.topic] != nil {
                ingest.remove(partition)
            } else if partition.topic == layout.carriedTopic {
                carried[partition.partition] = nil
            }
            committedOffsets[partition] = nil
            observer?.clearLag(topic: settings.topics.logical(partition.topic) ?? partition.topic, partition: Int(partition.partition))
        }
        unit.drop(Set(partitions))
        reportRestoring()
    }

    /// Throws away the open unit and puts every partition back where the last commit left it:
    /// folded partitions pause and restore their state, ingest partitions seek to their
    /// committed offsets. What the unit held will be processed again, identically.
    func rewindAll(reason: String) async {
        logger.warning("rewinding to the committed offsets and state", metadata: ["reason": "\(reason)"])
        await abandonFlight()
        parked = [:]
        unit = CommitUnit()
        dispatchedSinceSeal = 0
        var request = RestoreRequest(partitions: [:])
        var pause: [TopicPartition] = []
        for partition in folded.keys.sorted() {
            generation += 1
            for action in folded[partition]?.lifecycle.rewind(attempt: generation) ?? [] {
                switch action {
                case .discardLane:
                    folded[partition]?.lane?.discard()
                    folded[partition]?.lane = nil
                case .pause:
                    pause.append(TopicPartition(layout.foldedTopic, partition))
                case .restore(let attempt):
                    request.partitions[partition] = attempt
                case .startLane, .parkFold, .dropStale:
                    break
                }
            }
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
                let committed = try await consumer.committed(partitions, timeout: .seconds(10))
                var targets: [TopicPartition: Int64] = [:]
                for partition in partitions { targets[partition] = committed[partition] ?? KafkaConsumer.beginning }
                try await consumer.seek(targets, timeout: .seconds(10))
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
            guard folded[partition]?.lifecycle.awaits(attempt: generation) == true, let result = restored[partition]
            else { continue }
            if let cut = result.cut, cut.generation > layout.entry.generation {
                let message = "\(layout.foldedTopic)[\(partition)] was cut at offset \(cut.committedOffset) by the migration to generation \(cut.generation); restarting on the current generation registry"
                logger.notice("\(message)")
                staleLayout = message
                continue
            }
            var fold = PartitionFold(
                processor: processor, restoring: result.states, holding: result.held,
                decode: { image throws(StateImageError) in try StateCoding.decode(image, as: P.State.self) }, logTime: result.logTime)
            // Binary images are written from the fold's table at the seal; JSON ones need each
            // change's state before it (`PartitionLane`).
            fold.recording = settings.stateImages == .binary ? .users : .states
            guard activate(partition, attempt: generation, fold: fold, nextOffset: committed[partition]) else { continue }
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
            try await consumer.seek(seeks, timeout: .seconds(10))
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
        var still: [Int32: Int] = [:]
        for (partition, attempt) in request.partitions {
            for case .restore(let again) in folded[partition]?.lifecycle.restoreFailed(attempt: attempt) ?? [] {
                still[partition] = again
            }
        }
        let carriedStill = request.carried.filter { carried[$0.key] == .some($0.value) }
        let again = RestoreRequest(partitions: still, carried: carriedStill)
        if !again.isEmpty { restoreRequests.yield(again) }
    }

    /// Records addressed to inboxes go where `map` says from the next unit on; the caller
    /// commits the open unit first.
    func route(_ map: GenerationMap) {
        generations = map
        for entry in folded.values { entry.lane?.route(map) }
    }

    func reportRestoring() {
        let restoring = folded.values.filter { !$0.lifecycle.isActive }.count
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

    /// Hands one batch's records of the folded log to their partitions' lanes and forwards the
    /// ingest and carried records into the open unit. A lane over its high-water mark has its
    /// partition paused until it drains (`laneDrained`).
    ///
    /// Takes the batch (`batch` is left empty) and moves each record on to its lane: copying
    /// them was a retain and a release of each record's topic, key, value and headers, ~2 % of
    /// a busy delivery worker's CPU.
    func process(_ batch: inout [KafkaMessage]) {
        let now = ContinuousClock.now
        var inCounts: [String: Int] = [:]
        var lanes: [Int32: [KafkaMessage]] = [:]
        let namespace = settings.topics
        batch.reverseForPopping()
        while let message = batch.popLast() {
            if mismatches[message.topic] != nil { continue }
            if message.topic == layout.foldedTopic {
                // Counted by the lane, which skips re-delivered copies.
                lanes[message.partition, default: []].append(message)
                continue
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
        var full: [TopicPartition] = []
        // Taken out of `lanes` so that each lane gets the only reference to its records.
        while let (partition, records) = lanes.popFirst() {
            // Not ours to fold now (restoring, revoked): dropped, and read again from the
            // offset the restore seeks to.
            guard let entry = folded[partition], entry.lifecycle.isActive, let lane = entry.lane else { continue }
            dispatchedSinceSeal += records.count
            if lane.submit(consume records) { full.append(TopicPartition(layout.foldedTopic, partition)) }
            folded[partition]?.lastActivity = now
            unit.touch(at: now)
        }
        guard !full.isEmpty else { return }
        do {
            try consumer.pause(full)
            for _ in full { observer?.lanePaused(topic: layout.topics.log) }
        } catch {
            logger.error("pause of a full lane failed", metadata: ["partitions": "\(full)", "error": "\(error)"])
            for partition in full { folded[partition.partition]?.lane?.clearPaused() }
        }
    }

    /// The state for `attempt` is ready: if the partition still waits for it, it folds on a new
    /// lane from `nextOffset` on. Says whether it does (the caller then seeks and resumes).
    private func activate(_ partition: Int32, attempt: Int, fold: PartitionFold<P>, nextOffset: Int64?) -> Bool {
        guard var entry = folded[partition] else { return false }
        laneCount += 1
        let id = laneCount
        let actions = entry.lifecycle.stateReady(attempt: attempt, lane: id)
        guard actions.contains(.startLane(lane: id)) else { return false }
        entry.lane?.discard()
        entry.lane = startLane(partition, id: id, fold: fold, nextOffset: nextOffset)
        entry.lastActivity = .now
        folded[partition] = entry
        return true
    }

    /// Starts lane `id` folding `partition` from `nextOffset` with `fold`.
    private func startLane(_ partition: Int32, id: Int, fold: PartitionFold<P>, nextOffset: Int64?) -> FoldLane<P> {
        var mine: [Int64: Quarantine] = [:]
        for (input, quarantine) in quarantined
        where input.partition.topic == layout.foldedTopic && input.partition.partition == partition {
            mine[input.offset] = quarantine
        }
        let context = PartitionLane<P>.Context(
            processor: processor, layout: layout, settings: settings, observer: observer, logger: logger)
        let lane = FoldLane(
            id: id,
            lane: PartitionLane(
                partition: partition, fold: fold, nextOffset: nextOffset, context: context, generations: generations,
                quarantined: mine),
            bufferBytes: settings.laneBufferBytes,
            drained: { [weak self] partition, id in await self?.laneDrained(partition, lane: id) })
        laneStarts.start(lane)
        return lane
    }

    /// A lane paused for being full has drained: its partition fetches again, unless it was
    /// replaced, or paused for another reason, meanwhile.
    private func laneDrained(_ partition: Int32, lane id: Int) {
        guard let entry = folded[partition], entry.lifecycle.lane == id, entry.lane?.id == id,
              mismatches[layout.foldedTopic] == nil
        else { return }
        do {
            try consumer.resume([TopicPartition(layout.foldedTopic, partition)])
        } catch {
            logger.error("resume of a drained lane failed", metadata: ["partition": "\(partition)", "error": "\(error)"])
        }
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

    private func deadLetter(
        _ message: KafkaMessage, error: RecordError, namespace: TopicNamespace, cause: InputPosition, quarantinedAfter: Int? = nil
    ) {
        unit.append(
            DeadLetters.record(
                for: message, error: error, settings: settings, observer: observer, logger: logger, quarantinedAfter: quarantinedAfter),
            cause: cause)
    }

    // MARK: Ticks

    /// Appends a `tick` to every idle inbox partition with a due timer (DESIGN.md "Time"): the
    /// tick is read back like any record, so timers fire from the log, never from a clock.
    /// Stamped with the wall clock; in production the inbox's LogAppendTime replaces it with the
    /// broker's.
    func writeTicks(interval: Duration, wallClock: Timestamp, now: ContinuousClock.Instant) {
        guard layout.worker.ownsItsLog else { return }
        for (partition, entry) in folded where entry.lifecycle.isActive {
            guard now - entry.lastActivity >= interval,
                  let wakeUp = entry.lane?.nextWakeUp, wakeUp <= wallClock
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

    /// Whether the open unit has collected for a commit interval (or grown large).
    func isDue(now: ContinuousClock.Instant) -> Bool {
        guard let opened = unit.openedAt else { return false }
        return now - opened >= settings.commitInterval || unit.records.count + dispatchedSinceSeal >= 50_000
    }

    /// Commits the open unit now and waits for it (a revocation, a route change, shutdown):
    /// lands the unit in flight, if any, then seals and ships the open one and lands it. A
    /// failure that leaves a unit uncommitted rewinds every partition to its committed offsets
    /// and state; a fatal or fencing error throws `WorkerStopped`.
    func commit() async throws(WorkerStopped) {
        try await land()
        if let fatal { throw fatal }
        launch()
        try await land()
    }

    /// The pipelined commit of the consume and housekeeping loops: lands the unit in flight
    /// once it is done, and ships the open unit when it is due and nothing is in flight. The
    /// lanes fold on meanwhile; only landing a failed unit stops them (the rewind).
    func commitIfDue(now: ContinuousClock.Instant) async throws(WorkerStopped) {
        if let flight {
            guard flight.isFulfilled else { return }
            try await land()
        }
        if let fatal { throw fatal }
        if isDue(now: now) { launch() }
    }

    /// Seals the open unit — the ingest part now, each lane's part after the records it was
    /// handed so far — and ships it on its own task.
    private func launch() {
        guard fatal == nil, flight == nil else { return }
        let ingest = unit
        unit = CommitUnit()
        let parts = dispatchedSinceSeal > 0 || !ingest.isEmpty ? activeLanes().map { $0.seal() } : []
        dispatchedSinceSeal = 0
        guard !ingest.isEmpty || !parts.isEmpty else { return }
        let shipment = self.shipment
        let outcome = Handoff<ShipmentOutcome>()
        // Unstructured, but never left behind: every path that ends a run or rewinds waits for
        // the flight first (`land`, `abandonFlight`).
        Task {
            let shipped: ShipmentOutcome = await shipment.ship(ingest: ingest, parts: parts)
            outcome.fulfil(shipped)
        }
        flight = outcome
    }

    /// Waits for the unit in flight and applies its outcome: offsets and counters on success; a
    /// rewind of every partition on failure (the lanes' next unit goes with it).
    private func land() async throws(WorkerStopped) {
        guard let current = flight else { return }
        flight = nil
        let outcome = await current.value
        switch outcome {
        case .empty:
            return
        case .committed(let offsets, let stateRecords, let historyRecords, let elapsed):
            observer?.commitLatency(RuntimeClock.seconds(elapsed), guarantee: settings.guarantee)
            observer?.commit(result: .committed)
            // Outputs, forwards, ticks and dead letters were counted as they were made.
            observer?.recordOut(topic: layout.topics.state, count: stateRecords)
            observer?.recordOut(topic: layout.topics.history, count: historyRecords)
            committedOffsets.merge(offsets) { _, new in new }
            unitSucceeded(committed: offsets)
        case .failed(let error, let causes, let what):
            observer?.commit(result: .aborted)
            await unitFailed(error, causes: causes, what: what)
        case .abandoned(let reason):
            observer?.commit(result: .aborted)
            await rewindAll(reason: reason)
        case .stopped(let stopped):
            stop(stopped)
            throw stopped
        }
    }

    /// Waits for the unit in flight without applying it: the caller rewinds or ends anyway.
    private func abandonFlight() async {
        guard let current = flight else { return }
        flight = nil
        if case .stopped(let stopped) = await current.value { fatal = stopped }
    }

    /// Active lanes in partition order.
    private func activeLanes() -> [FoldLane<P>] {
        folded.keys.sorted().compactMap { folded[$0]?.lifecycle.isActive == true ? folded[$0]?.lane : nil }
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
        reasons += folded.filter { !$0.value.lifecycle.isActive }.keys.sorted().map { "restoring \(layout.foldedTopic)[\($0)]" }
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

    /// Ends every lane (the run is over; whatever they hold uncommitted is redone by the next
    /// owner of their partitions).
    func discardLanes() async {
        await abandonFlight()
        for partition in folded.keys { folded[partition]?.lane?.discard() }
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
