import FleetModel
import FleetService
import FleetTestSupport
import FleetWorkers
import Foundation
import Kafka
import Logging
import Testing

/// Runs fleet workers in-process against the local broker, each test in its own topic namespace
/// (a fresh prefix), and reads what they wrote.
///
/// The broker address comes from `FLEET_KAFKA_BOOTSTRAP` (`eval "$(scripts/broker env)"`); without
/// it these tests are skipped with a loud message, except under `CI=true` where they fail.
struct FleetHarness: Sendable {
    static var brokerAvailable: Bool { TestBrokerEnvironment.isAvailable(for: "IntegrationTests") }

    /// The workers the crash-equivalence, migration and wave suites run and compare with the
    /// simulator: every worker that decides from the log alone. The sender is left out on
    /// purpose: its effects are provider calls the simulator does not make, so "the same
    /// records as an uninterrupted run" cannot be checked for it there; `SenderFleetTests` kills
    /// and restarts it against the stand-in providers and counts their sends instead.
    static let deciders: [Worker] = Worker.allCases.filter { $0 != .sender }

    let bootstrap: String
    let namespace: TopicNamespace
    let partitions: Int32

    /// A fresh namespace with every fleet topic created.
    static func make(partitions: Int32 = 2, sourceLocation: SourceLocation = #_sourceLocation) async throws -> FleetHarness {
        let bootstrap = try #require(
            TestBrokerEnvironment.bootstrap,
            "FLEET_KAFKA_BOOTSTRAP must be set (scripts/broker start)", sourceLocation: sourceLocation)
        let namespace = TopicNamespace(prefix: "it-\(UUID().uuidString.prefix(8).lowercased()).")
        let harness = FleetHarness(bootstrap: bootstrap, namespace: namespace, partitions: partitions)
        try await TopicAdministration.create(admin: harness.admin(), partitions: partitions, namespace: namespace)
        return harness
    }

    func admin() throws -> KafkaAdmin { try KafkaAdmin(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests) }

    /// Deletes this namespace's topics (Tansu keeps every record in memory).
    func tearDown() async {
        // Generation topics a migration test may have made, too.
        let generations = Worker.allCases.filter(\.migrates).flatMap { worker in
            (2...3).flatMap { Topics.generationSpecs(of: worker, generation: $0) }
        }
        try? await admin().deleteTopics((TopicSpec.all + generations).map { namespace.physical($0.name) })
    }

    /// The environment a worker gets in tests: this namespace, the short group timeouts Tansu
    /// needs, at-least-once (Tansu shows aborted records), ticks off unless a test wants them;
    /// `overrides` win.
    func environment(for worker: Worker, _ overrides: [String: String] = [:]) -> [String: String] {
        [
            "FLEET_BOOTSTRAP_SERVERS": bootstrap,
            "FLEET_TOPIC_PREFIX": namespace.prefix,
            "FLEET_GROUP_ID": namespace.prefix + worker.rawValue,
            "FLEET_GUARANTEE": "at_least_once",
            "FLEET_TICK_INTERVAL_MS": "0",
            "FLEET_BATCH_MAX_RECORDS": "200",
            "FLEET_HTTP_PORT": "0",
            "KAFKA_SESSION_TIMEOUT_MS": "2000",
            "KAFKA_HEARTBEAT_INTERVAL_MS": "500",
        ].merging(overrides) { _, override in override }
    }

    func settings(for worker: Worker, _ overrides: [String: String] = [:]) throws -> WorkerSettings {
        try WorkerSettings(worker: worker, environment: environment(for: worker, overrides))
    }

    /// Starts `processor` as `worker` on the runtime in a background task; cancel the task to
    /// stop it.
    func start<P: UserProcessor>(_ worker: Worker, _ processor: P, _ overrides: [String: String] = [:]) throws -> Task<Void, any Error> {
        var logger = Logger(label: "test.\(worker.rawValue)")
        logger.logLevel = .warning
        let service = WorkerRuntime(settings: try settings(for: worker, overrides), processor: processor, logger: logger)
        return Task { try await service.run() }
    }

    /// Produces fleet records (keyed by user) to a logical topic, with the given timestamps.
    func produce(_ records: [(FleetRecord, Timestamp)], to topic: String) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
        _ = try await producer.send(records.map { record, time in
            ProducerRecord(topic: namespace.physical(topic), key: record.userId, value: RecordCodec.encode(record),
                           timestamp: time.millisecondsSinceEpoch)
        })
        await producer.close()
    }

    /// Produces raw bytes (e.g. a malformed record) to a logical topic.
    func produceRaw(key: String, value: [UInt8], to topic: String, at time: Timestamp) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
        _ = try await producer.send(ProducerRecord(
            topic: namespace.physical(topic), key: key, value: value, timestamp: time.millisecondsSinceEpoch))
        await producer.close()
    }

    /// Reads a logical topic from the beginning until `count` messages arrived or `timeout`
    /// passed, and returns what arrived (callers assert on the count). `read_uncommitted` also
    /// shows what open and aborted transactions wrote: everything the log holds.
    func read(
        _ topic: String, count: Int, timeout: Duration = .seconds(30),
        isolation: KafkaConfiguration.IsolationLevel = .readCommitted
    ) async throws -> [KafkaMessage] {
        var configuration = KafkaConfiguration(properties: [
            "bootstrap.servers": bootstrap, "group.id": "reader-\(UUID().uuidString.prefix(8))",
        ])
        configuration.isolationLevel = isolation
        let consumer = try KafkaConsumer(configuration: configuration, logger: .tests)
        var offsets: [TopicPartition: Int64] = [:]
        for p in 0..<partitions { offsets[TopicPartition(namespace.physical(topic), p)] = KafkaConsumer.beginning }
        try await consumer.assign(offsets)
        let messages = try await consumer.collect(count: count, timeout: timeout)
        await consumer.close()
        return messages.sorted { ($0.partition, $0.offset) < ($1.partition, $1.offset) }
    }

    /// Decoded fleet records of a logical output topic.
    func records(_ topic: String, count: Int, timeout: Duration = .seconds(30)) async throws -> [FleetRecord] {
        try await read(topic, count: count, timeout: timeout).compactMap { message in
            message.value.flatMap { try? RecordCodec.decode($0) }
        }
    }
}

extension Timestamp {
    static func at(_ text: String) -> Timestamp {
        guard let t = Timestamp(rfc3339: text) else { preconditionFailure("bad literal time \(text)") }
        return t
    }
}
