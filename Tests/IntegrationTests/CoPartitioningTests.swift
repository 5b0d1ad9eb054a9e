import FleetModel
import FleetTestSupport
import FleetWorkers
import Foundation
import Kafka
import Testing

/// DESIGN.md principle 2: a worker whose input, state and history topics are not co-partitioned
/// (or missing) refuses to start, promptly and non-zero, naming the topics and their counts.
@Suite("Co-partitioning at start-up", .enabled(if: FleetHarness.brokerAvailable))
struct CoPartitioningTests {
    /// Runs the delivery worker binary on `fleet`'s namespace and returns its exit status and
    /// stderr, failing if it is still running after `limit` ("promptly": it refuses before
    /// joining its group; alone it exits in about 0.1 s, but in the full parallel suite on CI's
    /// two cores it took 11–15 s, so the limit is generous: a figure belongs in a benchmark).
    private func runDeliveryWorker(on fleet: FleetHarness, limit: Duration = .seconds(45)) async throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = try ShutdownTests.executable("delivery-worker")
        process.environment = fleet.environment(for: .delivery)
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let ended = try? await ChildExit.termination(of: process, within: limit)
        let termination = try #require(ended, "the worker still runs \(limit) after start on topics it must refuse")
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (termination.shellStatus, stderr)
    }

    /// A namespace with only the delivery worker's own topics, at the given counts.
    private func namespace(_ counts: [String: Int32]) async throws -> FleetHarness {
        let bootstrap = try #require(TestBrokerEnvironment.bootstrap, "FLEET_KAFKA_BOOTSTRAP must be set (scripts/broker start)")
        let fleet = FleetHarness(
            bootstrap: bootstrap, namespace: TopicNamespace(prefix: "it-\(UUID().uuidString.prefix(8).lowercased())."), partitions: 1)
        try await fleet.admin().createTopics(counts.sorted { $0.key < $1.key }.map {
            NewTopic(name: fleet.namespace.physical($0.key), partitions: $0.value, replicationFactor: -1)
        })
        return fleet
    }

    @Test("topics with different partition counts: the worker refuses to start and names every topic and count", .timeLimit(.minutes(1)))
    func mismatchedCountsAreRefused() async throws {
        let worker = Worker.delivery
        let fleet = try await namespace([
            Topics.appActivity: 2, Topics.deliveryInbox: 2, worker.stateTopic: 3, worker.historyTopic: 2,
        ])
        defer { Task { await fleet.tearDown() } }

        let (status, stderr) = try await runDeliveryWorker(on: fleet)
        #expect(status != 0)
        let p = fleet.namespace.prefix
        #expect(stderr.contains(
            "delivery-worker refuses to start: topics are not co-partitioned: \(p)rin.app.activity=2, \(p)rin.delivery.inbox=2, \(p)delivery-worker.state=3, \(p)delivery-worker.history=2"),
            "stderr: \(stderr)")
    }

    @Test("missing topics: the worker refuses to start and names them", .timeLimit(.minutes(1)))
    func missingTopicsAreRefused() async throws {
        let worker = Worker.delivery
        let fleet = try await namespace([Topics.deliveryInbox: 2, worker.stateTopic: 2])
        defer { Task { await fleet.tearDown() } }

        let (status, stderr) = try await runDeliveryWorker(on: fleet)
        #expect(status != 0)
        let p = fleet.namespace.prefix
        #expect(stderr.contains(
            "delivery-worker refuses to start: missing topic(s) \(p)rin.app.activity, \(p)delivery-worker.history"),
            "stderr: \(stderr)")
    }
}
