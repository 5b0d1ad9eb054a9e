import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing

/// Issue 16: how long `fleetctl partitions migrate` holds deliveries back, and its memory, with a
/// production-size history. The delivery worker (the real executable) runs on 2 partitions whose
/// changelog holds 200 000 users' states and whose history holds a million images (five per
/// user); the command moves it to 4. The pause is the time from the cutover announcement to the
/// activation announcement (the two `fleet.generations` records' timestamps): deliveries wait
/// for it. Printed, not asserted (a timing); asserted: the migration completes, re-keys every
/// user and copies every history record. FLEET_MILLION_FLEETCTL measures another build.
@Suite("Migration pause with a production-size history", .enabled(if: FleetHarness.brokerAvailable), .timeLimit(.minutes(8)))
struct MigrationPauseTests {
    static let users = 200_000
    static let imagesPerUser = 5
    static let ticksPerPartition = 10_000

    @Test("migrate 2 → 4 partitions with 200 000 users and 1 000 000 history records: pause and max RSS printed")
    func pauseWithLargeHistory() async throws {
        guard ProcessInfo.processInfo.environment["FLEET_SKIP_MILLION"] != "1" else { return }
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let inbox = fleet.namespace.physical(Topics.deliveryInbox)
        let state = fleet.namespace.physical(Worker.delivery.stateTopic)
        let history = fleet.namespace.physical(Worker.delivery.historyTopic)
        let producer = try fleet.bulkProducer()
        let base = MillionRecordTests.base
        for partition: Int32 in 0..<2 {
            _ = try await producer.send((0..<Self.ticksPerPartition).map { offset in
                ProducerRecord(
                    topic: inbox, partition: partition, key: nil, value: Array(#"{"v":1,"type":"tick","id":"t-\#(partition)-\#(offset)"}"#.utf8),
                    timestamp: base + Int64(offset) * 1_000)
            })
        }
        // Each user's state as of an input the worker will have committed, and five history
        // images before it, on the user's partition.
        let image = try StateCoding.encode(DeliveryState())
        let chunk = 20_000
        for first in stride(from: 0, to: Self.users, by: chunk) {
            var batch: [ProducerRecord] = []
            batch.reserveCapacity(chunk * (Self.imagesPerUser + 1))
            for index in first..<first + chunk {
                let user = "m-\(index)"
                let partition = KeyPartitioner.partition(forKey: user, partitions: 2)
                let last = Int64(index % (Self.ticksPerPartition - Self.imagesPerUser)) + Int64(Self.imagesPerUser)
                for step in 0..<Self.imagesPerUser {
                    let offset = last - Int64(Self.imagesPerUser - 1 - step)
                    batch.append(ChangelogRecords.historyImage(
                        userId: user, after: image, unitStart: offset, changed: [offset],
                        logTime: Timestamp(millisecondsSinceEpoch: base + offset * 1_000), inputTopic: Topics.deliveryInbox,
                        topic: history, partition: partition))
                }
                // As the worker writes it: with the state's wake-up (an empty state has none).
                batch.append(ChangelogRecords.state(
                    userId: user, image: image, inputOffset: last, wakeUp: .recorded(nil), topic: state, partition: partition))
            }
            _ = try await producer.send(batch)
        }
        await producer.close()

        let environment = fleet.environment(for: .delivery, ["FLEET_METADATA_CHECK_INTERVAL_MS": "1000"])
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent("pause-\(fleet.namespace.prefix.dropLast())")
        let processes = try WorkerProcesses(slots: [.init(worker: .delivery, instance: 0)], logDirectory: logs) { _ in environment }
        defer { processes.killAll() }
        try processes.startAll()
        // The worker restored the states and committed the ticks: every state counts.
        let group = try #require(environment["FLEET_GROUP_ID"])
        var consumerConfiguration = KafkaConfiguration(bootstrapServers: fleet.bootstrap)
        consumerConfiguration["group.id"] = group
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: .tests)
        let partitions = (0..<Int32(2)).map { TopicPartition(inbox, $0) }
        let deadline = ContinuousClock.now + .seconds(180)
        while try await consumer.committed(partitions).values.filter({ $0 >= Int64(Self.ticksPerPartition) }).count < 2 {
            guard ContinuousClock.now < deadline else {
                Issue.record("the delivery worker did not commit its log: \(processes.logTail(.init(worker: .delivery, instance: 0)))")
                await consumer.close()
                return
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        await consumer.close()

        let fleetctl = try ProcessInfo.processInfo.environment["FLEET_MILLION_FLEETCTL"].map { URL(fileURLWithPath: $0) }
            ?? ShutdownTests.executable("fleetctl")
        let migrate = try await ChildProcess.run(
            fleetctl, ["partitions", "migrate", "--worker", "delivery-worker", "--to", "4", "--wait-timeout", "240"], environment: environment)
        let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, logger: .tests)
        var announced: [GenerationEntry.Phase: Int64] = [:]
        for message in try await reader.read([Topics.generations]) {
            guard let value = message.value, let entry = try? JSONDecoder().decode(GenerationEntry.self, from: Data(value)),
                  entry.worker == .delivery, entry.generation == 2 else { continue }
            if announced[entry.phase] == nil, let timestamp = message.timestamp { announced[entry.phase] = timestamp }
        }
        let pause: Double? = if let cutover = announced[.cutover], let active = announced[.active] {
            Double(active - cutover) / 1000
        } else {
            nil
        }
        let lines = migrate.stdout.split(separator: "\n").filter { $0.hasPrefix("re-keyed") || $0.hasPrefix("copied") }
        print("migration pause: \(Self.users) users, \(Self.users * Self.imagesPerUser) history records, 2 → 4 partitions: exit \(migrate.status), \(migrate.seconds) s, max RSS \(migrate.maxRSSBytes / 1_048_576) MB, pause (cutover → activation) \(pause.map { "\($0) s" } ?? "not measured"); \(lines.joined(separator: "; "))")
        #expect(migrate.status == 0, "\(migrate.stdout) \(migrate.stderr)")
        #expect(migrate.stdout.contains("re-keyed \(Self.users) user states"), "\(migrate.stdout)")
        #expect(migrate.stdout.contains("copied \(Self.users * Self.imagesPerUser) history records"), "\(migrate.stdout)")
        #expect(migrate.stdout.contains("migration complete"), "\(migrate.stdout)")
        #expect(pause != nil, "registry records: \(announced)")
    }
}
