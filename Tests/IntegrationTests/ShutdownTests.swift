import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Testing

/// The worker executables shut down gracefully on SIGTERM (swift-service-lifecycle): the batch in
/// hand is produced and committed, the consumer leaves the group, the process exits 0.
@Suite("Worker executables", .enabled(if: FleetHarness.brokerAvailable), .serialized)
struct ShutdownTests {
    /// `swift test` builds the executables next to the test bundle.
    static func executable(_ name: String) throws -> URL {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent(name) }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) },
                            "\(name) not built next to the tests (looked in \(candidates.map(\.path)))")
    }

    @Test("SIGTERM: the delivery worker commits what it processed and exits 0")
    func sigtermIsGraceful() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let group = fleet.namespace.prefix + "delivery-worker"
        let process = Process()
        process.executableURL = try Self.executable("delivery-worker")
        process.environment = fleet.environment(for: .delivery, ["FLEET_LOG_LEVEL": "warning"])
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let time = Timestamp.at("2026-11-21T09:00:00Z")
        try await fleet.produce((1...3).map { (.intent(Fixtures.securityIntent(id: "s\($0)", user: "u-term")), time) },
                                to: Topics.deliveryInbox)
        #expect(try await fleet.records(Topics.decisions, count: 3).count == 3)

        kill(process.processIdentifier, SIGTERM)
        let ended = try? await ChildExit.termination(of: process, within: .seconds(20))
        #expect(ended != nil, "the worker did not stop within 20 s of SIGTERM")
        #expect(ended == .exited(0))

        // Everything processed was committed: a restarted worker would not repeat it.
        let reader = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": fleet.bootstrap, "group.id": group,
        ]), logger: .tests)
        let inbox = TopicPartition(fleet.namespace.physical(Topics.deliveryInbox), 0)
        #expect(try await reader.committed([inbox])[inbox] == 3)
        await reader.close()
    }
}
