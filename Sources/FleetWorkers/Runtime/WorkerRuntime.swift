import Foundation
import Synchronization
public import FleetModel
import Kafka
public import Logging
public import ServiceLifecycle

/// The one runtime every worker runs on (DESIGN.md "Runtime"): a consumer group per worker with
/// the range assignor (whole user partitions per member), a deterministic fold per assigned partition of the worker's
/// log with its state restored from `<worker>.state`, an ingest stage for inbox workers, ticks
/// for idle inboxes, and commits under the configured guarantee.
///
/// Decision logic plugs in as a `UserProcessor`; nothing here reads a clock on its behalf. The
/// wall clock is used only to decide *when* to commit and to write ticks — a tick's time
/// reaches the logic by being read back from the log.
///
/// Tasks (one structured group): the consume loop folds batches; the housekeeping loop commits
/// idle units, writes ticks and re-checks partition counts; the restore loop rebuilds newly
/// assigned partitions. These three and the rebalance handler serialise on one `AsyncLock`, so
/// a rebalance sees either no unit or a committed one. The lag reporter asks the brokers
/// outside the lock, so a slow answer never delays a commit.
public struct WorkerRuntime<P: UserProcessor>: Service {
    public let settings: WorkerSettings
    public let processor: P
    public let observer: (any RuntimeObserver)?
    public let health: RuntimeHealth
    /// Where the runtime's consumer, producers, admin and readers come from: the brokers of
    /// `settings` unless a test passes an in-memory log's (`LogClients`).
    public let clients: any LogClients
    private let logger: Logger

    public init(
        settings: WorkerSettings, processor: P, observer: (any RuntimeObserver)? = nil,
        health: RuntimeHealth = RuntimeHealth(), clients: (any LogClients)? = nil, logger: Logger
    ) {
        self.settings = settings
        self.processor = processor
        self.observer = observer
        self.health = health
        self.clients = clients ?? KafkaLogClients(settings: settings, logger: logger)
        self.logger = logger
    }

    /// Runs until graceful shutdown (or a fatal error). When a partition migration changes the
    /// worker's own generation (`GenerationRegistry`), the runtime on the old topics ends the way
    /// a graceful shutdown does — last unit committed, group left — and a new one starts on the
    /// registry's current layout, in the same process.
    public func run() async throws {
        var generations = try await GenerationRegistry.read(namespace: settings.topics, clients: clients)
        while true {
            switch try await run(on: generations) {
            case .stopped:
                return
            case .generationChanged(let current, let reason):
                logger.notice("restarting on a new topic generation", metadata: [
                    "reason": "\(reason)", "generation": "\(current.entry(for: settings.worker).generation)",
                    "phase": "\(current.entry(for: settings.worker).phase.rawValue)",
                ])
                generations = current
            }
        }
    }

    /// How one run on one layout ended.
    private enum RunEnd {
        case stopped
        case generationChanged(GenerationMap, reason: String)
    }

    private func run(on generations: GenerationMap) async throws -> RunEnd {
        let layout = TopicLayout(worker: settings.worker, namespace: settings.topics, generations: generations)
        // One admin client for the start-up check and the running partition-count checks.
        let admin = try clients.makeAdmin()
        let partitionCount = try await checkTopics(layout, admin: admin)

        let consumer = try clients.makeConsumer()
        let producer = try clients.makeProducer()
        let markerProducer = settings.guarantee == .exactlyOnce ? try clients.makeMarkerProducer() : producer
        if settings.guarantee == .exactlyOnce {
            try await producer.initTransactions(timeout: .seconds(30))
        }
        await prepareTopics(producer, markerProducer: markerProducer, layout: layout, generations: generations)

        let (requests, requestSink) = AsyncStream.makeStream(of: FoldCore<P>.RestoreRequest.self)
        let laneStarts = LaneStarts<P>()
        let core = FoldCore(
            processor: processor, layout: layout, settings: settings, consumer: consumer, producer: producer,
            observer: observer, health: health, logger: logger, restoreRequests: requestSink, laneStarts: laneStarts,
            partitionCount: partitionCount, generations: generations)
        // Each folded partition's lane runs as a child of this group until it is stopped or
        // discarded; the group outlives the run's loops, so the last commit still seals them.
        return try await withThrowingTaskGroup(of: Void.self) { laneGroup in
            laneGroup.addTask {
                await withDiscardingTaskGroup { running in
                    while let lane = await laneStarts.next() { running.addTask { await lane.run() } }
                }
            }
            defer { laneStarts.finish() }
            do {
                let end = try await run(core: core, layout: layout, admin: admin, consumer: consumer, producer: producer,
                                        markerProducer: markerProducer, partitionCount: partitionCount, requests: requests,
                                        requestSink: requestSink, generations: generations)
                await core.discardLanes()
                return end
            } catch {
                await core.discardLanes()
                throw error
            }
        }
    }

    private func run(
        core: FoldCore<P>, layout: TopicLayout, admin: any LogAdmin, consumer: any LogConsumer, producer: any LogProducer,
        markerProducer: any LogProducer, partitionCount: Int, requests: AsyncStream<FoldCore<P>.RestoreRequest>,
        requestSink: AsyncStream<FoldCore<P>.RestoreRequest>.Continuation, generations: GenerationMap
    ) async throws -> RunEnd {
        let lock = AsyncLock()
        let observer = self.observer
        let logger = self.logger

        let topics = layout.subscribed
        try consumer.subscribe(topics: topics, pausingOnAssignment: layout.pausedOnAssignment) { event in
            // On the consumer's poll thread, before the change applies.
            switch event.kind {
            case .assigned: observer?.rebalance(kind: .assigned)
            case .revoked: observer?.rebalance(kind: .revoked)
            case .lost: observer?.rebalance(kind: .lost)
            }
            logger.info("rebalance", metadata: ["event": "\(event)"])
            await lock.withLock {
                switch event.kind {
                case .assigned:
                    await core.assigned(event.partitions)
                case .revoked:
                    do throws(WorkerStopped) {
                        try await core.revoked(event.partitions)
                    } catch {
                        await core.stop(error)
                    }
                case .lost:
                    await core.lost(event.partitions)
                }
            }
        }
        await core.reportRestoring()
        logger.info("worker started", metadata: [
            "topics": "\(topics.joined(separator: ","))", "group": "\(settings.groupId)",
            "guarantee": "\(settings.guarantee.rawValue)", "partitions": "\(partitionCount)",
            "generation": "\(layout.entry.generation)", "phase": "\(layout.entry.phase.rawValue)",
        ])

        let restorer = StateRestorer<P.State>(
            reader: clients.makeChangelogReader(), stateTopic: layout.stateTopic, logger: logger)
        var lifecycle = WorkerLifecycle()
        _ = lifecycle.started()
        // The first loop to end says how the run ends; the others are stopped.
        let (ending, error) = await withTaskGroup(of: (WorkerLifecycle.Ending, (any Error)?)?.self) { group in
            group.addTask {
                await Self.ending { try await consume(consumer.recordBatches, core: core, lock: lock) }
            }
            group.addTask {
                await Self.ending { try await housekeeping(core: core, lock: lock, layout: layout, admin: admin, generations: generations) }
            }
            group.addTask {
                await reportLag(core: core, consumer: consumer)
                return nil
            }
            group.addTask {
                await restoreLoop(
                    requests: requests, restorer: restorer, consumer: consumer, markerProducer: markerProducer,
                    core: core, lock: lock, layout: layout)
                return nil
            }
            var first: (WorkerLifecycle.Ending, (any Error)?) = (.shutdown, nil)
            while let next = await group.next() {
                if let next { first = next }
                break
            }
            group.cancelAll()
            return first
        }
        var failure = error
        var restart: GenerationMap?
        var actions = lifecycle.loopEnded(ending)
        while !actions.isEmpty {
            var next: [WorkerLifecycle.Action] = []
            for action in actions {
                switch action {
                case .stopLoops:
                    requestSink.finish()
                case .commitLastUnit:
                    do {
                        try await lock.withLock { try await core.commit() }
                        next += lifecycle.lastUnitDone(failure: nil)
                    } catch {
                        failure = error
                        next += lifecycle.lastUnitDone(failure: "\(error)")
                    }
                case .close(let flush):
                    switch lifecycle.phase {
                    case .stopped(.generationChanged):
                        logger.info("leaving this generation's layout: last unit committed, leaving the group")
                    case .stopped(.shutdown):
                        logger.info("shutting down: last unit committed, leaving the group")
                    default:
                        break
                    }
                    await consumer.close()
                    if flush { try? await producer.flush(timeout: .seconds(30)) }
                    await producer.close(timeout: .seconds(30))
                    if markerProducer !== producer { await markerProducer.close(timeout: .seconds(30)) }
                case .fail(let message):
                    health.fail(message)
                    logger.error("worker stopped", metadata: ["error": "\(message)"])
                case .restart(let map):
                    restart = map
                }
            }
            if case .draining(.failed) = lifecycle.phase { next += lifecycle.lastUnitDone(failure: nil) }
            actions = next
        }
        if case .stopped(.failed(let message)) = lifecycle.phase { throw failure ?? WorkerStopped(description: message) }
        if let restart, case .stopped(.generationChanged(_, let reason)) = lifecycle.phase {
            return .generationChanged(restart, reason: reason)
        }
        return .stopped
    }

    /// How a loop that returns or throws ended the run.
    private static func ending(
        _ loop: () async throws -> WorkerLifecycle.Ending?
    ) async -> (WorkerLifecycle.Ending, (any Error)?) {
        do {
            return (try await loop() ?? .shutdown, nil)
        } catch {
            return (.failed("\(error)"), error)
        }
    }

    /// Has the producers look up every topic they write before the first unit and the first
    /// restore: without it the first commit after a start waited for those lookups (0.6–0.85 s
    /// on the local broker), and so did a security notification folded in it; under
    /// exactly-once the restore's markers go through a producer of their own, whose first send
    /// paid the same. A failed lookup is only logged: the first send looks the topic up again.
    private func prepareTopics(
        _ producer: any LogProducer, markerProducer: any LogProducer, layout: TopicLayout, generations: GenerationMap
    ) async {
        // The log itself too: ticks and forwarded ingest records are written into it.
        let unitTopics = settings.worker.outputTopics.map { settings.topics.physical(generations.route($0)) }
            + [layout.stateTopic, layout.historyTopic, layout.foldedTopic]
        // Restore markers, and during a cutover the cuts in the previous generation's changelog.
        let markerTopics = [layout.stateTopic] + (layout.carriedStateTopic.map { [$0] } ?? [])
        var lookups = [(producer, unitTopics)]
        if markerProducer !== producer { lookups.append((markerProducer, markerTopics)) }
        for (client, topics) in lookups {
            do {
                try await client.prepare(topics: topics, timeout: .seconds(5))
            } catch {
                logger.warning("looking up topics before the first write failed; that write will", metadata: [
                    "topics": "\(topics)", "error": "\(error)",
                ])
            }
        }
    }

    /// Start-up check (principle 2): the worker's topics exist and share one partition count.
    private func checkTopics(_ layout: TopicLayout, admin: any LogAdmin) async throws -> Int {
        let counts = try await admin.partitionCounts(of: layout.required.map(settings.topics.physical))
        do {
            return try layout.partitionCount(in: counts)
        } catch {
            logger.critical("\(error.description)")
            throw error
        }
    }

    /// Folds the consumer's batches (`batches` is the consumer's sequence, opened from its
    /// existential so the graceful-shutdown wrapper is generic over the concrete type).
    private func consume<Batches: AsyncSequence & Sendable>(
        _ batches: Batches, core: FoldCore<P>, lock: AsyncLock
    ) async throws -> WorkerLifecycle.Ending? where Batches.Element == [KafkaMessage] {
        for try await batch in batches.cancelOnGracefulShutdown() {
            // Handed over, not shared: the core moves each record on to its lane (`process`).
            var batch = consume batch
            try await lock.withLock {
                await core.process(&batch)
                try await core.commitIfDue(now: .now)
                if let fatal = await core.fatal { throw fatal }
            }
        }
        return .shutdown
    }

    /// Commits units that stopped growing, writes ticks, re-checks partition counts and the
    /// generation registry. Ends the run (`.generationChanged`) when the worker's own
    /// generation entry changed or a partition it would fold was cut.
    private func housekeeping(
        core: FoldCore<P>, lock: AsyncLock, layout: TopicLayout, admin: any LogAdmin, generations: GenerationMap
    ) async throws -> WorkerLifecycle.Ending? {
        var generations = generations
        var step = settings.commitInterval / 2
        if let tick = settings.tickInterval { step = min(step, tick / 2) }
        step = max(step, .milliseconds(5))
        let started = ContinuousClock.now
        var lastMetadataCheck = ContinuousClock.now
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: step)
            let now = ContinuousClock.now
            try await lock.withLock {
                if let tick = settings.tickInterval {
                    await core.writeTicks(interval: tick, wallClock: RuntimeClock.wallClock(), now: now)
                }
                try await core.commitIfDue(now: now)
                if let fatal = await core.fatal { throw fatal }
            }
            if now - started >= .seconds(30) { await core.joinGracePassed() }
            if let stale = await core.staleLayout {
                let current = (try? await GenerationRegistry.read(
                    namespace: settings.topics, clients: clients, admin: admin)) ?? generations
                return .generationChanged(current, reason: stale)
            }
            if now - lastMetadataCheck >= settings.metadataCheckInterval {
                lastMetadataCheck = now
                let read: GenerationMap
                do {
                    read = try await GenerationRegistry.read(namespace: settings.topics, clients: clients, admin: admin)
                } catch {
                    logger.warning("generation registry check failed", metadata: ["error": "\(error)"])
                    read = generations
                }
                let current = read
                if current.entry(for: settings.worker) != layout.entry {
                    return .generationChanged(current, reason: "the registry moved \(settings.worker.rawValue) to generation \(current.entry(for: settings.worker).generation) (\(current.entry(for: settings.worker).phase.rawValue))")
                }
                if current != generations {
                    // Another worker's inbox moved: commit what was routed the old way, then
                    // route the next unit the new way.
                    try await lock.withLock {
                        try await core.commit()
                        await core.route(current)
                    }
                    logger.notice("inbox routes changed", metadata: ["routes": "\(current.entries.values.map { "\($0.worker.rawValue)=g\($0.writeGeneration)" }.sorted())"])
                    generations = current
                }
                do {
                    let counts = try await admin.partitionCounts(of: layout.coPartitioned.map(settings.topics.physical))
                    await core.checkPartitionCounts(counts)
                } catch {
                    logger.warning("partition count check failed", metadata: ["error": "\(error)"])
                }
            }
        }
        return .shutdown
    }

    /// Restores partitions as they are assigned; a failed restore is retried after a pause.
    private func restoreLoop(
        requests: AsyncStream<FoldCore<P>.RestoreRequest>, restorer: StateRestorer<P.State>, consumer: any LogConsumer,
        markerProducer: any LogProducer, core: FoldCore<P>, lock: AsyncLock, layout: TopicLayout
    ) async {
        let instance = settings.instanceId ?? ProcessInfo.processInfo.hostName
        var attempt = 0
        for await received in requests {
            var request = received
            var partitions = request.partitions.keys.sorted()
            do {
                if !request.carried.isEmpty {
                    try await startCarrying(request, consumer: consumer, markerProducer: markerProducer, core: core, lock: lock, layout: layout)
                }
                guard !request.partitions.isEmpty else { continue }
                let physical = partitions.map { TopicPartition(layout.foldedTopic, $0) }
                let committedByTopic = try await consumer.committed(physical, timeout: .seconds(10))
                var committed: [Int32: Int64] = [:]
                for (partition, offset) in committedByTopic { committed[partition.partition] = offset }
                // An eager rebalance hands most partitions straight back: those nobody folded
                // meanwhile keep their fold; only the rest read the changelog.
                request = await lock.withLock { await core.resumeParked(request, committed: committed) }
                partitions = request.partitions.keys.sorted()
                guard !partitions.isEmpty else { continue }
                attempt += 1
                let restored = try await restorer.restore(
                    partitions, committed: committed, markerProducer: markerProducer,
                    nonce: "\(instance)-\(ProcessInfo.processInfo.processIdentifier)-\(attempt)")
                await lock.withLock {
                    await core.finishRestore(restored, committed: committed, request: request)
                }
            } catch {
                if Task.isCancelled {
                    logger.info("restore stopped: the worker is shutting down", metadata: ["partitions": "\(partitions)"])
                    return
                }
                logger.error("restore failed; retrying", metadata: ["partitions": "\(partitions)", "error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
                if Task.isCancelled { return }
                await core.retryRestore(request)
            }
        }
    }

    /// Carried partitions start at their committed offsets. During a cutover each first gets
    /// a cut in the previous generation's changelog naming that offset: where the old fold
    /// stopped, for the migration to re-key exactly the committed states, and a stop sign for
    /// any member still on the old generation.
    private func startCarrying(
        _ request: FoldCore<P>.RestoreRequest, consumer: any LogConsumer, markerProducer: any LogProducer,
        core: FoldCore<P>, lock: AsyncLock, layout: TopicLayout
    ) async throws {
        guard let carriedTopic = layout.carriedTopic, let cutTopic = layout.carriedStateTopic else { return }
        let physical = request.carried.keys.sorted().map { TopicPartition(carriedTopic, $0) }
        let committedByTopic = try await consumer.committed(physical, timeout: .seconds(10))
        var committed: [Int32: Int64] = [:]
        for (partition, offset) in committedByTopic { committed[partition.partition] = offset }
        if layout.entry.phase == .cutover {
            let cuts = request.carried.keys.sorted().map {
                ChangelogRecords.cut(generation: layout.entry.generation, committedOffset: committed[$0] ?? 0, topic: cutTopic, partition: $0)
            }
            _ = try await markerProducer.send(cuts)
            logger.info("cut the previous generation", metadata: [
                "partitions": "\(request.carried.keys.sorted())", "committed": "\(LogValues.offsets(committed))",
            ])
        }
        await lock.withLock { await core.finishCarry(committed: committed, request: request) }
    }
}

/// What `/healthz` and `/readyz` answer for a running worker: a snapshot the runtime updates
/// whenever readiness changes, read without waiting (the HTTP port answers from its event loop).
public final class RuntimeHealth: Sendable {
    private struct Snapshot {
        /// nil until the runtime has started.
        var notReady: [String]?
        /// Which user partitions the member folds (nil before its first assignment).
        var folding: String?
        var failure: String?
        /// Set while the worker cannot make progress (commit units fail again and again).
        var stalled: String?
    }

    private let snapshot = Mutex(Snapshot())

    public init() {}

    /// Why the worker is not ready (one line each); empty when every assigned partition is
    /// restored and every topic is processed.
    func update(notReady: [String], folding: String? = nil) {
        snapshot.withLock {
            $0.notReady = notReady
            $0.folding = folding
        }
    }

    /// The worker cannot go on: `/healthz` fails with `message`.
    func fail(_ message: String) {
        snapshot.withLock { $0.failure = message }
    }

    /// The worker is alive but makes no progress (`message`), or makes progress again (nil):
    /// `/healthz` fails while it is set, so Kubernetes restarts the pod.
    func stall(_ message: String?) {
        snapshot.withLock { $0.stalled = message }
    }

    public var readiness: Readiness {
        let current = snapshot.withLock { $0 }
        if let failure = current.failure { return Readiness(reasons: [Readiness.Reason(failure)]) }
        if let stalled = current.stalled { return Readiness(reasons: [Readiness.Reason(stalled)]) }
        guard let notReady = current.notReady else { return .notReady(Readiness.Reason("starting")) }
        return Readiness(reasons: notReady.map(Readiness.Reason.init), details: current.folding.map { [$0] } ?? [])
    }

    public var health: HealthStatus {
        let current = snapshot.withLock { $0 }
        return (current.failure ?? current.stalled).map(HealthStatus.failed) ?? .alive
    }
}
