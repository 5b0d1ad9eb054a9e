import DeliveryPolicy
import FleetLogTesting
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Logging
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// The delivery worker on an in-memory log (`FleetLogTesting`): the real `WorkerRuntime` and
/// the real `DeliveryEngine`, no broker. Instances are named; each gets clients of its own, so a
/// fault or crash hits one instance, as a SIGKILL hits one pod.
///
/// The input goes to the delivery inbox only (no ingest, ticks off), written by the test in
/// waves, the next once everything before it is committed (`drive`), so a run makes several
/// commit units; the fold's order is the log's, and every correct run — whatever its unit
/// boundaries, crashes or rebalances — writes the same outputs.
struct InMemoryFleet: Sendable {
    static let partitions = 2
    static let engine: DeliveryEngine = {
        do { return DeliveryEngine(profile: try PolicyProfile.shipped("rin")) } catch { preconditionFailure("\(error)") }
    }()

    let guarantee: DeliveryGuarantee
    /// `FLEET_*` variables on top of the fleet's own (e.g. a tiny lane buffer).
    let environment: [String: String]
    let log: InMemoryLog
    let namespace = TopicNamespace()

    /// The input, cut into waves of `waveSize` records.
    static let waveSize = 12
    let waves: [[ProducerRecord]]
    private let fed = WaveCount()

    final class WaveCount: Sendable {
        let value = Mutex(0)
    }

    /// A log with every fleet topic; `drive` writes the input.
    init(guarantee: DeliveryGuarantee, environment: [String: String] = [:]) throws {
        self.guarantee = guarantee
        self.environment = environment
        log = InMemoryLog(group: "delivery")
        let input = Self.input(namespace: namespace)
        let size = Self.waveSize
        waves = stride(from: 0, to: input.count, by: size).map { Array(input[$0..<min($0 + size, input.count)]) }
        log.createTopics(TopicSpec.all.map { namespace.physical($0.name) }, partitions: Self.partitions)
    }

    /// Feeds the waves, each once everything before it is committed, until the whole input is
    /// committed (true) or `interrupted` holds (false: e.g. the instance running died).
    func drive(until what: String, interrupted: () -> Bool = { false }) async throws -> Bool {
        while true {
            try await wait(for: what) { caughtUp || interrupted() }
            if interrupted() { return false }
            let next = fed.value.withLock { count -> Int? in
                guard count < waves.count else { return nil }
                count += 1
                return count - 1
            }
            guard let next else { return true }
            try log.append(waves[next])
        }
    }

    var inbox: String { namespace.physical(Topics.deliveryInbox) }
    var stateTopic: String { namespace.physical(Worker.delivery.stateTopic) }
    var historyTopic: String { namespace.physical(Worker.delivery.historyTopic) }

    /// Six users, each with a sign-up, security intents (delivered at once) and ordinary ones
    /// that spend the daily budget (P-BUD-1), one record every ten seconds of log time.
    static func input(namespace: TopicNamespace) -> [ProducerRecord] {
        let users = (0..<6).map { "u-\($0 + 100)" }
        let source = SourceCoordinates(topic: "test.source", partition: 0, offset: 0)
        var clock = Timestamp(rfc3339: "2026-11-21T09:00:00Z")?.millisecondsSinceEpoch ?? 0
        var records: [ProducerRecord] = []
        func add(_ record: FleetRecord) {
            clock += 10_000
            records.append(ProducerRecord(
                topic: namespace.physical(Topics.deliveryInbox), key: record.userId, value: RecordCodec.encode(record),
                timestamp: clock))
        }
        for round in 0..<4 {
            for user in users {
                add(.intent(Intent(
                    id: "\(user)-signin-\(round)", userId: user, notification: "security.new_signin", category: "SECURITY",
                    data: ["detail": "New sign-in from Firefox on Linux."], source: source)))
                add(.intent(Intent(
                    id: "\(user)-score-\(round)", userId: user, notification: "score.updated", category: "SCORE",
                    data: ["old": .int(Int64(70 + round)), "new": .int(Int64(71 + round)), "label": "Good"], source: source)))
                add(.intent(Intent(
                    id: "\(user)-dedup-\(round)", userId: user, notification: "contacts.dedup_ready", category: "CONTACTS",
                    data: ["count": .int(Int64(round + 2))], source: source)))
            }
        }
        return records
    }

    func settings() throws -> WorkerSettings {
        try WorkerSettings(worker: .delivery, environment: [
            "FLEET_BOOTSTRAP_SERVERS": "in-memory:9092",
            "FLEET_GROUP_ID": "delivery",
            "FLEET_GUARANTEE": guarantee.rawValue,
            "FLEET_TICK_INTERVAL_MS": "0",
            "FLEET_COMMIT_INTERVAL_MS": "5",
            "FLEET_BATCH_MAX_RECORDS": "8",
            "FLEET_HTTP_PORT": "0",
        ].merging(environment) { _, override in override })
    }

    /// One running runtime instance.
    struct Instance: Sendable {
        let name: String
        let task: Task<Void, any Error>
        /// Its graceful shutdown (SIGTERM), once the task has started.
        let shutdown: Shutdown
    }

    final class Shutdown: Sendable {
        let trigger = Mutex<GracefulShutdownTestTrigger?>(nil)
    }

    /// Starts instance `name` on the log (small batches, so units are many).
    func start(_ name: String, observer: (any RuntimeObserver)? = nil) throws -> Instance {
        try start(name, observer: observer) { _ in }
    }

    /// Starts instance `name` once `known` has seen it: a fault that acts on the instance
    /// itself (cancels its task) can then never fire before the test knows the task. Without
    /// it, a loaded machine let the instance reach its fault's step first, and the fault
    /// missed.
    func start(_ name: String, observer: (any RuntimeObserver)? = nil, known: (Instance) -> Void) throws -> Instance {
        var logger = Logger(label: "in-memory.\(name)")
        // IN_MEMORY_LOG_LEVEL=info shows what the instances do when a case fails.
        logger.logLevel = ProcessInfo.processInfo.environment["IN_MEMORY_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        let clients = InMemoryLogClients(log: log, instance: name, guarantee: guarantee, maxBatchSize: 8)
        let runtime = WorkerRuntime(
            settings: try settings(), processor: Self.engine, observer: observer, clients: clients, logger: logger)
        let shutdown = Shutdown()
        let (released, release) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            for await _ in released { break }
            try await testGracefulShutdown { trigger in
                shutdown.trigger.withLock { $0 = trigger }
                try await runtime.run()
            }
        }
        let instance = Instance(name: name, task: task, shutdown: shutdown)
        known(instance)
        release.yield()
        release.finish()
        return instance
    }

    /// Whether every input record is committed.
    var caughtUp: Bool {
        let committed = log.committedOffsets
        return (0..<Self.partitions).allSatisfy { partition in
            let inbox = TopicPartition(inbox, Int32(partition))
            return (committed[inbox] ?? 0) == log.endOffset(inbox)
        }
    }

    /// Waits until `condition` holds (a wait only: what the log holds never depends on it).
    /// The bound only turns a hang into a failure: in the full test pass every suite shares the
    /// two cores and the concurrency pool, and a run that takes 0.1 s alone can take tens of
    /// seconds there (CI saw 20 s exceeded), so it is generous.
    func wait(for what: String, timeout: Duration = .seconds(300), _ condition: () -> Bool) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while !condition() {
            guard clock.now < deadline else { throw Timeout(what: what) }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out waiting for \(what)" }
    }

    /// Ends an instance as SIGTERM does (graceful shutdown: it commits what it holds unless it
    /// is dead, and leaves the group) and waits for it, for at most `timeout`: a runtime that
    /// does not end is a failure, not a hang.
    func stop(_ instance: Instance, timeout: Duration = .seconds(120)) async throws {
        try await wait(for: "instance \(instance.name) to start") { instance.shutdown.trigger.withLock { $0 != nil } }
        instance.shutdown.trigger.withLock { $0 }?.triggerGracefulShutdown()
        let ended = Ended()
        Task {
            _ = await instance.task.result
            ended.value.withLock { $0 = true }
        }
        try await wait(for: "instance \(instance.name) to stop", timeout: timeout) { ended.value.withLock { $0 } }
    }

    final class Ended: Sendable {
        let value = Mutex(false)
    }

    // MARK: What a run wrote

    /// A record as readers see it: every byte that reaches them.
    struct RecordBytes: Hashable, Sendable, CustomStringConvertible {
        var key: [UInt8]?
        var value: [UInt8]?
        var headers: [KafkaHeader]
        var timestamp: Int64?

        init(_ message: KafkaMessage) {
            key = message.key
            value = message.value
            headers = message.headers
            timestamp = message.timestamp
        }

        var description: String { String(decoding: value ?? [], as: UTF8.self).prefix(160).description }
    }

    /// The worker's output topics: everything it writes but its changelog and history, whose
    /// records are per commit unit (a run cut into other units writes other positions and
    /// per-unit images, while the states they lead to are the same: see `finalStates`).
    var outputTopics: [String] {
        TopicSpec.all.map { namespace.physical($0.name) }.filter { $0 != inbox && $0 != stateTopic && $0 != historyTopic }
    }

    /// Per output topic and partition, the records a read_committed reader sees, in order.
    func committedOutputs() -> [String: [[RecordBytes]]] {
        var outputs: [String: [[RecordBytes]]] = [:]
        for topic in outputTopics { outputs[topic] = log.committedRecords(topic).map { $0.map(RecordBytes.init) } }
        return outputs
    }

    /// Every distinct output record written (re-sent copies collapse).
    func distinctOutputs() -> [String: Set<RecordBytes>] {
        var outputs: [String: Set<RecordBytes>] = [:]
        for topic in outputTopics { outputs[topic] = Set(log.committedRecords(topic).joined().map(RecordBytes.init)) }
        return outputs
    }

    /// Every output record, copies included.
    func allOutputs() -> [String: [RecordBytes]] {
        var outputs: [String: [RecordBytes]] = [:]
        for topic in outputTopics { outputs[topic] = log.committedRecords(topic).joined().map(RecordBytes.init) }
        return outputs
    }

    /// Each user's state as a restore at the committed offsets would find it: the changelog
    /// read under the restore rule (`ChangelogImages`), images compared byte for byte.
    func finalStates() throws -> [String: [UInt8]] {
        var states: [String: [UInt8]] = [:]
        let committed = log.committedOffsets
        for (partition, records) in log.committedRecords(stateTopic).enumerated() {
            var images = ChangelogImages(
                committed: committed[TopicPartition(inbox, Int32(partition))], decoding: DeliveryState.self)
            for record in records { try images.read(record) }
            for (user, held) in images.held { states[user] = held.image }
            for (user, kept) in images.images { states[user] = try StateCoding.encode(kept.state(as: DeliveryState.self)) }
        }
        return states
    }
}
