import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Synchronization
import Testing

/// `fleetctl partitions migrate --worker sender-worker` (issue 17): the sender moves to another
/// partition count like the delivery worker (re-key, cutover, activation), and its effect stage
/// follows the generation registry, so provider answers go into the inbox generation producers
/// write into: the old one until the activation (the runtime carries them over), the new one after.
@Suite(.enabled(if: FleetHarness.brokerAvailable), .serialized, .timeLimit(.minutes(3)))
struct SenderMigrationTests {
    @Test("2 → 3 partitions with sends in flight: every delivery sent once, answers then written into the new inbox, a replay of the new generation identical (P-IDEM-1)")
    func migrate() async throws {
        let fleet = try await SenderFleet.make(overrides: ["FLEET_METADATA_CHECK_INTERVAL_MS": "500"])
        defer {
            fleet.processes.killAll()
            Task { await fleet.tearDown() }
        }
        let before = (0..<4).map { "u-before-\($0)" }, after = (0..<4).map { "u-after-\($0)" }
        let token = { (user: String) in "tok\(user.filter { $0.isLetter || $0.isNumber })" }
        // One answer of each kind that outlives the cutover: a retry due 2 s after a 429.
        fleet.apns.script(token(before[0]), [.tooManyRequests(retryAfterSeconds: 2), .success])
        try await fleet.produce((before + after).map { SenderFleet.device($0, "phone", .ios, token: token($0)) }, to: Topics.devices)
        try fleet.start()
        try await fleet.waitForInbox(before.count + after.count, types: ["device.registered"])

        // Deliveries in flight while the migration cuts over and re-keys.
        try await fleet.produce(before.map { SenderFleet.delivery("d-\($0)", user: $0) }, to: Topics.deliveries)
        let lines = Lines()
        let outcome = try await PartitionMigration(
            worker: .sender, partitions: 3, configuration: KafkaConfiguration(bootstrapServers: fleet.harness.bootstrap),
            namespace: fleet.harness.namespace, groupId: fleet.harness.namespace.prefix + Worker.sender.rawValue,
            waitTimeout: .seconds(60), logger: .tests
        ).run { lines.append($0) }
        print("partitions migrate --worker sender-worker --to 3:\n\(lines.text)")
        #expect(outcome == .complete, "\(lines.text)")
        let newLog = Worker.sender.topics(generation: 2).log
        let physicalNewLog = fleet.harness.namespace.physical(newLog)
        // The effect stage re-reads the registry every 500 ms and says where its answers go.
        let deadline = ContinuousClock.now + .seconds(20)
        while !fleet.processes.logTail(SenderFleet.slot, lines: 200).contains("answers go to \(physicalNewLog)"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(
            fleet.processes.logTail(SenderFleet.slot, lines: 200).contains("answers go to \(physicalNewLog)"),
            "the effect stage did not follow the registry; log:\n\(fleet.logTail)")

        try await fleet.produce(after.map { SenderFleet.delivery("d-\($0)", user: $0) }, to: Topics.deliveries)
        let receipts = try await fleet.receipts(before.count + after.count)
        #expect(receipts.count == before.count + after.count, "one receipt per delivery")
        #expect(receipts.allSatisfy { $0.status == .sent }, "\(receipts.filter { $0.status != .sent })")
        #expect(SenderFleet.of("d-\(before[0])", in: receipts)[.push]?.attempts == 2, "retried once after the 429")
        for user in before + after {
            #expect(fleet.apns.delivered.filter { $0.deviceToken == token(user) }.count == 1, "\(user) got one push")
        }

        // Answers to the deliveries made after the migration were written into the new log by
        // the effect stage itself (no provenance: not carried over), none into the old one.
        let afterDeliveries = Set(after.map { "d-\($0)" })
        let answersAfter = { (messages: [KafkaMessage]) in
            messages.filter { message in
                guard case .sender(.result(let result))? = message.value.flatMap({ try? RecordCodec.decode($0) }) else { return false }
                return afterDeliveries.contains(result.deliveryId)
            }
        }
        let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: fleet.harness.bootstrap), namespace: fleet.harness.namespace, logger: .tests)
        var newLogRecords: [KafkaMessage] = [], oldLogRecords: [KafkaMessage] = []
        try await reader.stream(try await reader.beginnings(of: [newLog])) { newLogRecords.append($0) }
        try await reader.stream(try await reader.beginnings(of: [Topics.senderInbox])) { oldLogRecords.append($0) }
        let direct = answersAfter(newLogRecords).filter { $0.header(KafkaRecords.Header.sourceTopic) == nil }
        #expect(Set(direct.compactMap { $0.key.map { String(decoding: $0, as: UTF8.self) } }) == Set(after), "answers written into \(newLog)")
        #expect(answersAfter(oldLogRecords).isEmpty, "no answer went into the old log after the activation")

        // The migrated sender replays like every worker: its new log from the first answer.
        let ends = try await fleet.awaitFolded(log: newLog, partitions: 3)
        let reports = try await fleet.replayFromFirstAnswer(ends: ends, generation: 2)
        #expect(!reports.isEmpty, "no answer in \(newLog)")
        for report in reports {
            let identical = report.isIdentical
            #expect(identical, "\(report.render(worker: .sender, details: false))")
        }
    }
}

/// The migration's progress lines, gathered from its report callback.
private final class Lines: Sendable {
    private let stored = Mutex<[String]>([])
    func append(_ line: String) { stored.withLock { $0.append(line) } }
    var text: String { stored.withLock { $0.joined(separator: "\n") } }
}
