import DeliveryPolicy
import Foundation
import SenderCore
public import FleetModel
public import FleetWorkers
public import Kafka
public import Logging
import UpstreamProcessors

/// `fleetctl partitions migrate`: moves a worker that owns its log to a new generation of its
/// topics with another partition count, losing and repeating nothing (DESIGN.md "Operating it").
///
/// The steps, each of which finds out for itself whether it is done, so the command can be
/// interrupted anywhere and run again:
///
/// 1. **create** the new generation's log, changelog, history and dead-letter topics with N
///    partitions;
/// 2. **cutover**: the registry (`fleet.generations`) says generation g is cutting over. Each
///    running worker restarts on it: it stops folding the old log, writes a *cut* per old
///    partition (the committed offset where its fold stopped) and from there carries the old
///    log's records over into the new log, origins and therefore ids unchanged. Producers keep
///    writing into the old log meanwhile, so every user's records stay in order;
/// 3. **drain**: wait until every old partition has its cut: from then on nothing folds the old
///    generation;
/// 4. **re-key**: each user's committed state at the cuts, and the latest log time, go into the
///    new changelog on the user's new partition;
/// 5. **activate**: the registry says generation g is active. The worker restores the new
///    partitions from the re-keyed changelog and folds the new log (where the carried records
///    wait); producers switch to writing into it;
/// 6. **history**: the old history is copied into the new one, each record on its user's new
///    partition. The fold needs none of it (only replay and explain read history), so this runs
///    after the activation: deliveries pause from the cutover to the activation only, not for the
///    copy, which grows with the history's retention. Records already copied are skipped, so a
///    run of the command after an interruption finishes the copy;
/// 7. **verify**: the new topics are co-partitioned, the new changelog holds every re-keyed user,
///    and the worker's group commits on the new log.
public struct PartitionMigration: Sendable {
    public var worker: Worker
    public var partitions: Int
    public var configuration: KafkaConfiguration
    public var namespace: TopicNamespace
    /// The worker's consumer group, whose committed offsets show it folding the new log.
    public var groupId: String
    public var replicationFactor: Int32
    /// How long to wait for the cuts, and for the worker to fold the new generation.
    public var waitTimeout: Duration
    /// Stop after the re-key, leaving the worker cut over: an operator can check the new
    /// generation (or wait for an agreed moment) before the worker folds it. Deliveries of the
    /// worker wait until the command runs again without it, which activates and verifies.
    public var holdBeforeActivation: Bool
    /// Gets the clients' lines (librdkafka's included): the tool's logger.
    public var logger: Logger

    public init(
        worker: Worker, partitions: Int, configuration: KafkaConfiguration, namespace: TopicNamespace, groupId: String,
        replicationFactor: Int32 = -1, waitTimeout: Duration = .seconds(600), holdBeforeActivation: Bool = false, logger: Logger
    ) {
        self.logger = logger
        self.holdBeforeActivation = holdBeforeActivation
        self.worker = worker
        self.partitions = partitions
        self.configuration = configuration
        self.namespace = namespace
        self.groupId = groupId
        self.replicationFactor = replicationFactor
        self.waitTimeout = waitTimeout
    }

    public struct MigrationError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Where the migration stands: what is done and what is left, for `--dry-run` and for the
    /// run itself.
    public struct Plan: Sendable, CustomStringConvertible {
        public var worker: Worker
        public var from: GenerationEntry
        public var fromPartitions: Int
        public var target: GenerationEntry
        public var steps: [(name: String, done: Bool, what: String)]

        public var description: String {
            var lines = ["migrate \(worker.rawValue): generation \(from.generation) (\(fromPartitions) partitions) → generation \(target.generation) (\(target.partitions) partitions)"]
            for (index, step) in steps.enumerated() {
                lines.append("  \(index + 1). [\(step.done ? "done" : "todo")] \(step.name): \(step.what)")
            }
            return lines.joined(separator: "\n")
        }

        public var isComplete: Bool { steps.allSatisfy(\.done) }
    }

    /// Works out the plan from the registry and the topics, changing nothing.
    public func plan() async throws -> Plan {
        guard worker.migrates else {
            throw MigrationError(description: "\(worker.rawValue) cannot migrate (\(worker.whyNotMigrating)): only \(Worker.allCases.filter(\.migrates).map(\.rawValue).joined(separator: ", ")) can")
        }
        guard partitions > 0 else { throw MigrationError(description: "--to must be at least 1") }
        let map = try await GenerationRegistry.read(configuration: configuration, namespace: namespace, logger: logger)
        let current = map.entry(for: worker)
        let admin = try KafkaAdmin(configuration: configuration, logger: logger)

        let target: GenerationEntry
        let from: GenerationEntry
        if current.phase == .cutover {
            guard current.partitions == partitions else {
                throw MigrationError(description: "a migration of \(worker.rawValue) to \(current.partitions) partitions (generation \(current.generation)) is in progress: finish it first with --to \(current.partitions)")
            }
            target = current
            from = GenerationEntry(worker: worker, generation: current.generation - 1, partitions: 0, phase: .active)
        } else {
            let currentCount = try await partitionCount(of: worker.topics(generation: current.generation).log, admin: admin)
            if currentCount == partitions {
                var steps: [(name: String, done: Bool, what: String)] = []
                if current.generation > 1 {
                    // A run interrupted after the activation may have left the copy unfinished.
                    let previous = worker.topics(generation: current.generation - 1)
                    let new = worker.topics(generation: current.generation)
                    steps.append(("history", false, "copy what is missing of \(namespace.physical(previous.history)) into \(namespace.physical(new.history)) (records already copied are skipped)"))
                }
                steps.append(("verify", false, "\(worker.rawValue) already runs on \(partitions) partitions (generation \(current.generation)); check it"))
                return Plan(worker: worker, from: current, fromPartitions: currentCount, target: current, steps: steps)
            }
            target = GenerationEntry(worker: worker, generation: current.generation + 1, partitions: partitions, phase: .cutover)
            from = current
        }
        let fromCount = try await partitionCount(of: worker.topics(generation: from.generation).log, admin: admin)
        let newTopics = Topics.generationSpecs(of: worker, generation: target.generation).map(\.name)
        let counts = try await admin.partitionCounts(topics: newTopics.map(namespace.physical))
        let created = newTopics.allSatisfy { counts[namespace.physical($0)] == partitions }
        let announced = current.generation == target.generation
        let new = worker.topics(generation: target.generation)
        return Plan(worker: worker, from: from, fromPartitions: fromCount, target: target, steps: [
            ("create", created, "create \(newTopics.map(namespace.physical).joined(separator: ", ")) with \(partitions) partitions"),
            ("cutover", announced, "announce generation \(target.generation) in \(namespace.physical(Topics.generations)): \(worker.rawValue) stops folding \(namespace.physical(worker.topics(generation: from.generation).log)) and carries it over; producers keep writing there"),
            ("drain", false, "wait until each of the \(fromCount) old partitions has its cut (the committed offset where the old fold stopped)"),
            ("re-key", false, "write each user's committed state and the log time into \(namespace.physical(new.state))"),
            ("activate", false, "announce generation \(target.generation) active: \(worker.rawValue) folds \(namespace.physical(new.log)), producers write into it"),
            ("history", false, "copy the history into \(namespace.physical(new.history)) while the worker folds (records already copied are skipped)"),
            ("verify", false, "check the new topics, the re-keyed changelog and that \(groupId) commits on the new log"),
        ])
    }

    /// How a run ended.
    public enum Outcome: Sendable, Equatable {
        /// Every step is done: the worker folds the new generation.
        case complete
        /// Stopped after the re-key (`holdBeforeActivation`): the worker is cut over and waits.
        case heldBeforeActivation
    }

    /// Runs every step not done yet, reporting progress through `report`.
    @discardableResult
    public func run(report: @Sendable (String) -> Void) async throws -> Outcome {
        let plan = try await plan()
        report(plan.description)
        let target = plan.target
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let outcome: Outcome
        do {
            if plan.from == plan.target {
                // Already on the asked count: finish an interrupted history copy, then check.
                if target.generation > 1 {
                    let reader = FleetTopicReader(configuration: configuration, namespace: namespace, logger: logger)
                    let old = worker.topics(generation: target.generation - 1)
                    let oldCount = try await partitionCount(of: old.log, admin: try KafkaAdmin(configuration: configuration, logger: logger))
                    let cuts = try await waitForCuts(old: old, generation: target.generation, count: oldCount, reader: reader, report: report)
                    try await copyHistory(old: old, new: worker.topics(generation: target.generation), cuts: cuts, reader: reader, producer: producer, report: report)
                }
                try await verify(generation: target.generation, expectedUsers: nil, report: report)
                outcome = .complete
            } else {
                outcome = try await run(plan, producer: producer, report: report)
            }
        } catch {
            await producer.close()
            throw error
        }
        await producer.close()
        return outcome
    }

    private func run(_ plan: Plan, producer: KafkaProducer, report: @Sendable (String) -> Void) async throws -> Outcome {
        let target = plan.target
        let admin = try KafkaAdmin(configuration: configuration, logger: logger)
        // 1. create
        let specs = Topics.generationSpecs(of: worker, generation: target.generation)
        try await admin.createTopics(specs.map {
            NewTopic(name: namespace.physical($0.name), partitions: Int32(partitions), replicationFactor: replicationFactor, configs: $0.configs)
        }, ignoreExisting: true)
        let counts = try await admin.partitionCounts(topics: specs.map { namespace.physical($0.name) })
        let wrong = specs.map { namespace.physical($0.name) }.filter { counts[$0] != partitions }
        guard wrong.isEmpty else {
            throw MigrationError(description: "topics exist with another partition count: \(wrong.map { "\($0)=\(counts[$0] ?? 0)" }.joined(separator: ", ")); delete them (they hold nothing of the fleet yet) or migrate to that count")
        }
        report("created \(specs.map { namespace.physical($0.name) }.joined(separator: ", "))")

        // 2. cutover
        try await ensureRegistryTopic(admin: admin)
        var cutover = target
        cutover.phase = .cutover
        if !plan.steps[1].done {
            _ = try await producer.send(try GenerationRegistry.record(cutover, namespace: namespace))
            report("announced generation \(target.generation) cutover; waiting for \(worker.rawValue) to cut every old partition")
        }

        // 3. drain
        let old = worker.topics(generation: target.generation - 1)
        let reader = FleetTopicReader(configuration: configuration, namespace: namespace, logger: logger)
        let cuts = try await waitForCuts(old: old, generation: target.generation, count: plan.fromPartitions, reader: reader, report: report)
        report("every old partition is cut: \(cuts.sorted { $0.key < $1.key }.map { "\($0.key)@\($0.value)" }.joined(separator: " "))")

        // 4. re-key
        let new = worker.topics(generation: target.generation)
        // Streamed: the old changelog through the restore rule (per user its committed state),
        // so memory stays bounded by the users.
        let rekeyStarted = ContinuousClock.now
        let records = try await rekeyChangelog(
            reader: reader, old: old, cuts: cuts, topic: namespace.physical(new.state), producer: producer)
        report("re-keyed \(records.users) user states into \(namespace.physical(new.state)) (log time \(records.logTime?.description ?? "none")) in \(Self.seconds(since: rekeyStarted))")
        if holdBeforeActivation {
            report("held before activation: \(worker.rawValue) stays cut over (it carries \(namespace.physical(old.log)) into \(namespace.physical(new.log)) and delivers nothing); run the command again without --hold-before-activate to activate (the history is copied after the activation)")
            return .heldBeforeActivation
        }

        // 5. activate
        var active = target
        active.phase = .active
        _ = try await producer.send(try GenerationRegistry.record(active, namespace: namespace))
        report("announced generation \(target.generation) active")

        // 6. history, while the worker folds the new generation
        try await copyHistory(old: old, new: new, cuts: cuts, reader: reader, producer: producer, report: report)

        // 7. verify
        try await verify(generation: target.generation, expectedUsers: records.users, report: report)
        return .complete
    }

    /// Copies the old generation's history into the new one, each record on its user's new
    /// partition, 5 000 at a time (memory: one batch plus the origins already copied); records
    /// at or past their partition's cut, and those copied by an earlier run, are skipped.
    private func copyHistory(
        old: GenerationTopics, new: GenerationTopics, cuts: [Int32: Int64], reader: FleetTopicReader, producer: KafkaProducer,
        report: @Sendable (String) -> Void
    ) async throws {
        let started = ContinuousClock.now
        var copied = Set<String>()
        try await reader.stream(try await reader.beginnings(of: [new.history])) { message in
            copied.formUnion(StateRekeying.copiedOrigins(in: [message]))
        }
        var pending: [ProducerRecord] = []
        var copiedNow = 0
        let alreadyCopied = copied
        try await reader.stream(try await reader.beginnings(of: [old.history])) { message in
            pending += StateRekeying.historyCopies(
                of: [message], cuts: cuts, alreadyCopied: alreadyCopied, partitions: partitions, topic: namespace.physical(new.history))
            if pending.count >= 5000 {
                _ = try await producer.send(pending)
                copiedNow += pending.count
                pending.removeAll(keepingCapacity: true)
            }
        }
        _ = try await producer.send(pending)
        copiedNow += pending.count
        report("copied \(copiedNow) history records into \(namespace.physical(new.history)) (\(copied.count) were already there) in \(Self.seconds(since: started))")
    }

    /// Seconds since `start`, to the millisecond, for the progress lines.
    private static func seconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return "\((seconds * 1000).rounded() / 1000) s"
    }

    // MARK: Steps

    private func waitForCuts(
        old: GenerationTopics, generation: Int, count: Int, reader: FleetTopicReader, report: @Sendable (String) -> Void
    ) async throws -> [Int32: Int64] {
        let deadline = ContinuousClock.now.advanced(by: waitTimeout)
        var lastMissing: [Int32] = []
        while true {
            var cutRecords: [KafkaMessage] = []
            try await reader.stream(try await reader.beginnings(of: [old.state])) { message in
                if StateRekeying.isCut(message) { cutRecords.append(message) }
            }
            let cuts = StateRekeying.cuts(in: cutRecords, generation: generation)
            let missing = (0..<Int32(count)).filter { cuts[$0] == nil }
            if missing.isEmpty { return cuts }
            if missing != lastMissing {
                report("waiting for cuts of \(namespace.physical(old.log)) partitions \(missing.map(String.init).joined(separator: ",")) (is \(worker.rawValue) running?)")
                lastMissing = missing
            }
            if ContinuousClock.now >= deadline {
                throw MigrationError(description: "no cut for partitions \(missing) within \(waitTimeout): start \(worker.rawValue) (it cuts the partitions it is assigned) and run the command again")
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    private struct Rekeyed {
        var users: Int
        var logTime: Timestamp?
    }

    /// Writes the new changelog (`StateRekeying`): the old one streamed through the restore
    /// rule, keeping each user's image bytes as a restore does, then each user's record made and
    /// sent 5 000 at a time in user id order, so what is held is the committed images.
    private func rekeyChangelog(
        reader: FleetTopicReader, old: GenerationTopics, cuts: [Int32: Int64], topic: String, producer: KafkaProducer
    ) async throws -> Rekeyed {
        func rekey<State: Codable & Hashable & Sendable>(_ type: State.Type) async throws -> Rekeyed {
            var committed = StateRekeying.CommittedImages<State>(cuts: cuts)
            try await reader.stream(try await reader.beginnings(of: [old.state])) { message in try committed.add(message) }
            let users = committed.users
            let logTime = committed.logTime
            var batch: [ProducerRecord] = []
            for user in users {
                guard let record = try committed.changelogRecord(of: user, partitions: partitions, topic: topic) else { continue }
                batch.append(record)
                if batch.count >= 5000 {
                    _ = try await producer.send(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
            batch += StateRekeying.positionRecords(logTime: logTime, partitions: partitions, topic: topic)
            _ = try await producer.send(batch)
            return Rekeyed(users: users.count, logTime: logTime)
        }
        switch worker {
        case .delivery: return try await rekey(DeliveryEngine.State.self)
        case .reminder: return try await rekey(ReminderState.self)
        case .sender: return try await rekey(SenderState.self)
        case .score, .sync, .access:
            throw MigrationError(description: "\(worker.rawValue) cannot migrate (\(worker.whyNotMigrating))")
        }
    }

    private func verify(generation: Int, expectedUsers: Int?, report: @Sendable (String) -> Void) async throws {
        let map = try await GenerationRegistry.read(configuration: configuration, namespace: namespace, logger: logger)
        let entry = map.entry(for: worker)
        guard entry.generation == generation, entry.phase == .active else {
            throw MigrationError(description: "the registry says \(worker.rawValue) is on generation \(entry.generation) (\(entry.phase.rawValue)), not \(generation) active")
        }
        let topics = worker.topics(generation: generation)
        let admin = try KafkaAdmin(configuration: configuration, logger: logger)
        let layout = TopicLayout(worker: worker, namespace: namespace, generations: map)
        let counts = try await admin.partitionCounts(topics: layout.required.map(namespace.physical))
        let count: Int
        do { count = try layout.partitionCount(in: counts) } catch { throw MigrationError(description: error.description) }
        report("ok: \(layout.coPartitioned.map(namespace.physical).joined(separator: ", ")) exist with \(count) partitions")

        if let expectedUsers {
            // Streamed: the users' keys are kept, not the records.
            let reader = FleetTopicReader(configuration: configuration, namespace: namespace, logger: logger)
            var migrated = Set<String>()
            try await reader.stream(try await reader.beginnings(of: [topics.state])) { message in
                guard message.header(ChangelogRecords.kindHeader).map({ String(decoding: $0, as: UTF8.self) }) == ChangelogRecords.Kind.state.rawValue,
                      let key = message.key else { return }
                migrated.insert(String(decoding: key, as: UTF8.self))
            }
            guard migrated.count >= expectedUsers else {
                throw MigrationError(description: "\(namespace.physical(topics.state)) holds \(migrated.count) users, \(expectedUsers) were re-keyed")
            }
            report("ok: \(namespace.physical(topics.state)) holds the \(expectedUsers) re-keyed user states")
        }

        // The worker folds the new log once its group commits there. Partitions that received
        // nothing yet have nothing to commit.
        var groupConfiguration = configuration
        groupConfiguration["group.id"] = groupId
        let consumer = try KafkaConsumer(configuration: groupConfiguration, logger: logger)
        do {
            try await waitForCommits(consumer: consumer, log: namespace.physical(topics.log), count: count, generation: generation, report: report)
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
    }

    private func waitForCommits(
        consumer: KafkaConsumer, log: String, count: Int, generation: Int, report: @Sendable (String) -> Void
    ) async throws {
        let deadline = ContinuousClock.now.advanced(by: waitTimeout)
        while true {
            var waiting: [Int32] = []
            for partition in 0..<Int32(count) {
                let high = try await consumer.queryWatermarks(TopicPartition(log, partition)).high
                guard high > 0 else { continue }
                let committed = try await consumer.committed([TopicPartition(log, partition)])[TopicPartition(log, partition)] ?? 0
                if committed <= 0 { waiting.append(partition) }
            }
            if waiting.isEmpty {
                report("ok: \(groupId) commits on every partition of \(log) that has records; \(worker.rawValue) runs on generation \(generation)")
                return
            }
            if ContinuousClock.now >= deadline {
                throw MigrationError(description: "\(groupId) has not committed on \(log) partitions \(waiting) within \(waitTimeout): is \(worker.rawValue) running? (its /readyz says what it waits for)")
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    private func partitionCount(of logical: String, admin: KafkaAdmin) async throws -> Int {
        let name = namespace.physical(logical)
        guard let count = try await admin.partitionCounts(topics: [name])[name], count > 0 else {
            throw MigrationError(description: "missing topic \(name)")
        }
        return count
    }

    private func ensureRegistryTopic(admin: KafkaAdmin) async throws {
        let name = namespace.physical(Topics.generations)
        try await admin.createTopics(
            [NewTopic(name: name, partitions: 1, replicationFactor: replicationFactor, configs: ["cleanup.policy": "compact"])],
            ignoreExisting: true)
    }
}
