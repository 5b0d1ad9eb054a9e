import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Logging
import Testing

/// A large partition's restore sizes its tables from the users count of the last position record
/// before its marker (`StateRestorer.Sizing`, issue 13). The count is a hint: a restore sized
/// from it, one not sized, and one whose window holds no position must restore the same states.
@Suite("Restore sized from the last position record", .enabled(if: FleetHarness.brokerAvailable), .serialized)
struct RestoreSizingTests {
    @Test("the delivery worker's position records count its users; a restore sized from the last one restores what an unsized one does (principle 5)")
    func sizedRestoreEqualsUnsized() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let users = ["u-size-1", "u-size-2", "u-size-3"]
        let log = users.flatMap { RuntimeTests.dayOfIntents(user: $0).prefix(2) }.sorted { $0.1 < $1.1 }
        let expected = RuntimeTests.expectedOutputs(log).filter { $0.topic == Topics.decisions }.count

        let worker = try fleet.start(.delivery, RuntimeTests.engine)
        try await fleet.produce(log, to: Topics.deliveryInbox)
        #expect(try await fleet.records(Topics.decisions, count: expected).count == expected)
        worker.cancel()
        _ = await worker.result

        // The worker's last position record counts every user of the partition.
        let changelog = try await fleet.read(Worker.delivery.stateTopic, count: 4, timeout: .seconds(5))
        let positions = try changelog.filter { $0.header(ChangelogRecords.kindHeader) == Array("position".utf8) }
            .map { try ChangelogRecords.controlEntry(of: $0) }
        guard case .position(_, _, let counted)? = positions.last else {
            Issue.record("no position record in \(changelog.count) changelog records")
            return
        }
        #expect(counted == users.count)

        let committed = try await committedOffset(fleet)
        let sized = try await restore(fleet, committed: committed, sizing: .init(threshold: 0), nonce: "sized")
        let unsized = try await restore(fleet, committed: committed, sizing: .init(threshold: .max), nonce: "unsized")
        // A window of one record sees only the previous restore's marker: no count, tables grow as they fill.
        let missed = try await restore(fleet, committed: committed, sizing: .init(threshold: 0, window: 1), nonce: "missed")
        #expect(sized.sizedFor == users.count)
        #expect(unsized.sizedFor == nil && missed.sizedFor == nil)
        for other in [unsized, missed] {
            #expect(sized.held == other.held && sized.states == other.states && sized.logTime == other.logTime)
        }
        #expect(Set(sized.held.keys).union(sized.states.keys) == Set(users))
    }

    private func committedOffset(_ fleet: FleetHarness) async throws -> Int64 {
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": fleet.bootstrap, "group.id": fleet.namespace.prefix + Worker.delivery.rawValue,
        ]), logger: .tests)
        defer { Task { await consumer.close() } }
        let inbox = TopicPartition(fleet.namespace.physical(Topics.deliveryInbox), 0)
        return try #require(try await consumer.committed([inbox])[inbox])
    }

    private func restore(
        _ fleet: FleetHarness, committed: Int64, sizing: StateRestorer<DeliveryState>.Sizing, nonce: String
    ) async throws -> StateRestorer<DeliveryState>.Restored {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), logger: .tests)
        defer { Task { await producer.close() } }
        let restorer = StateRestorer<DeliveryState>(
            consumerConfiguration: KafkaConfiguration(properties: [
                "bootstrap.servers": fleet.bootstrap, "group.id": fleet.namespace.prefix + "sizing-" + nonce,
            ]),
            stateTopic: fleet.namespace.physical(Worker.delivery.stateTopic), timeout: .seconds(30), sizing: sizing,
            logger: Logger(label: "restore-sizing"))
        let restored = try await restorer.restore([0], committed: [0: committed], markerProducer: producer, nonce: nonce)
        return try #require(restored[0])
    }
}
