import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing

/// The runbook's incident commands (docs/operations.md, "Replaying topics for an incident" and
/// "DLQ triage and redrive"), run as the `fleetctl` executable with the runbook's options against
/// a delivery worker's recorded run: what an on-call engineer types is what is tested. The
/// libraries behind them are tested in depth by ExplainTests, ReplayTests and
/// DeadLetterRedriveTests; the migration command by PartitionMigrationTests.
@Suite("Runbook commands", .enabled(if: FleetHarness.brokerAvailable), .timeLimit(.minutes(5)))
struct RunbookCommandTests {
    @Test("explain, replay, export and dlq as the runbook types them (P-BUD-1, P-DND-1, P-IDEM-1)")
    func runbookCommands() async throws {
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let worker = try fleet.start(.delivery, ExplainScenario.engine)
        defer { worker.cancel() }
        let environment = fleet.environment(for: .delivery)
        func fleetctl(_ arguments: String...) async throws -> (status: Int32, output: String) {
            try await PartitionMigrationTests.fleetctl(arguments, environment: environment)
        }

        let budgetUser = ExplainScenario.budgetUser, quietUser = ExplainScenario.quietUser
        let budgetPartition = KeyPartitioner.partition(forKey: budgetUser, partitions: 2)
        let quietPartition = KeyPartitioner.partition(forKey: quietUser, partitions: 2)
        try #require(budgetPartition != quietPartition)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), logger: .tests)
        let days = [(ExplainScenario.budgetDay(), budgetPartition), (ExplainScenario.quietNight(), quietPartition)]
        for (entries, partition) in days {
            _ = try await producer.send(entries.map { entry in
                ProducerRecord(
                    topic: fleet.namespace.physical(Topics.deliveryInbox), partition: partition,
                    key: entry.key.map { Array($0.utf8) }, value: RecordCodec.encode(entry.record),
                    timestamp: entry.time.millisecondsSinceEpoch)
            })
        }
        #expect(try await fleet.records(Topics.decisions, count: 6, timeout: .seconds(60)).count == 6)
        // The last unit's history lands with its commit, which can come after its outputs are
        // readable: wait for the worker to commit every input, not for a moment.
        try await ReplayTests.awaitCommitted(fleet, records: days.map(\.0.count).reduce(0, +))

        // Explain: the suppressed chain, the deferred one, JSON for tools.
        let explained = try await fleetctl("explain", "--user", budgetUser)
        #expect(explained.status == 0, "\(explained.output)")
        #expect(explained.output.contains("suppressed: daily_budget (P-BUD-1)"), "\(explained.output)")
        let window = try await fleetctl("explain", "--user", quietUser, "--since", "2026-11-22T00:00:00Z", "--until", "2026-11-23T00:00:00Z")
        #expect(window.status == 0)
        #expect(window.output.contains("deferred until 2026-11-22T07:00:00Z: quiet_hours (P-DND-1)"), "\(window.output)")
        let json = try await PartitionMigrationTests.fleetctlStreams(["explain", "--user", budgetUser, "--json"], environment: environment)
        #expect(json.status == 0)
        #expect((try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) != nil, "not JSON: \(json.stdout.prefix(300))")
        #expect(!json.stderr.contains("CONFWARN"), "\(json.stderr)")
        let nobody = try await fleetctl("explain", "--user", "u-nobody")
        #expect(nobody.status == 0 && nobody.output.contains("no records for user u-nobody"))

        // Replay: identical for a partition from a time and for a user from an offset.
        let partition = try await fleetctl(
            "replay", "--worker", "delivery-worker", "--partition", String(budgetPartition), "--from", "2026-11-21T00:00:00Z")
        #expect(partition.status == 0 && partition.output.contains("identical"), "\(partition.output)")
        let user = try await fleetctl("replay", "--worker", "delivery-worker", "--user", budgetUser, "--from", "0")
        #expect(user.status == 0 && user.output.contains("identical"), "\(user.output)")

        // What-if with a daily budget of 2: the third delivery of the budget day is lost.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("runbook-\(fleet.namespace.prefix.dropLast())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let candidate = directory.appendingPathComponent("candidate.yaml")
        let yaml = try PolicyProfile.shippedYAML("rin")
        let budgetTwo = yaml.replacingOccurrences(of: "daily_limit: 3 ", with: "daily_limit: 2 ")
        try #require(budgetTwo != yaml)
        try budgetTwo.write(to: candidate, atomically: true, encoding: .utf8)
        let whatIf = try await fleetctl(
            "replay", "--worker", "delivery-worker", "--user", budgetUser, "--from", "2026-11-21T00:00:00Z",
            "--profile", candidate.path, "--details")
        #expect(whatIf.status == 0, "\(whatIf.output)")
        #expect(whatIf.output.contains("P-BUD-1") && whatIf.output.contains("lost"), "\(whatIf.output)")

        // Export the user's day and study it offline.
        let slice = directory.appendingPathComponent("slice.jsonl")
        let exported = try await fleetctl(
            "export", "--worker", "delivery-worker", "--user", budgetUser, "--from", "2026-11-21T00:00:00Z",
            "--to", "2026-11-23T00:00:00Z", "--output", slice.path)
        #expect(exported.status == 0, "\(exported.output)")
        let offline = try await fleetctl("replay", "--input", slice.path, "--profile", candidate.path, "--details")
        #expect(offline.status == 0 && offline.output.contains("lost"), "\(offline.output)")

        // A bad activity record is dead-lettered; redriven with a fixed value it is decided once.
        let bad = #"{"v":1,"type":"user.signed_up","id":"su-late","user_id":"\#(budgetUser)"}"#
        let report = try await producer.send(ProducerRecord(
            topic: fleet.namespace.physical(Topics.appActivity), key: Array(budgetUser.utf8), value: Array(bad.utf8),
            timestamp: Timestamp.at("2026-11-22T09:00:00Z").millisecondsSinceEpoch))
        await producer.close()
        #expect(try await fleet.read(Topics.deadLetter(of: Topics.appActivity), count: 1, timeout: .seconds(30)).count == 1)
        let id = "\(Topics.appActivity):\(report.partition):\(report.offset)"
        let listed = try await fleetctl("dlq", "list", "--topic", Topics.appActivity, "--since", "2026-11-21T00:00:00Z")
        #expect(listed.status == 0 && listed.output.contains(id) && listed.output.contains("time_zone"), "\(listed.output)")
        let shown = try await fleetctl("dlq", "show", "--topic", Topics.appActivity, "--id", id)
        #expect(shown.status == 0 && shown.output.contains("su-late"), "\(shown.output)")
        let fixed = directory.appendingPathComponent("fixed.json")
        try #"{"v":1,"type":"user.signed_up","id":"su-late","user_id":"\#(budgetUser)","time_zone":"UTC"}"#
            .write(to: fixed, atomically: true, encoding: .utf8)
        let dryRun = try await fleetctl("dlq", "redrive", "--topic", Topics.appActivity, "--id", id, "--value-file", fixed.path, "--dry-run")
        #expect(dryRun.status == 0, "\(dryRun.output)")
        let redriven = try await fleetctl("dlq", "redrive", "--topic", Topics.appActivity, "--id", id, "--value-file", fixed.path)
        #expect(redriven.status == 0 && redriven.output.contains("redriven"), "\(redriven.output)")
        let again = try await fleetctl("dlq", "redrive", "--topic", Topics.appActivity, "--id", id, "--value-file", fixed.path)
        #expect(again.status == 1 && again.output.contains("already redriven"), "\(again.output)")
        // The fixed record reached the inbox once, with the dead-lettered record's coordinates.
        let forwarded = try await fleet.read(Topics.deliveryInbox, count: 1_000, timeout: .seconds(5))
            .filter { $0.value.map { String(decoding: $0, as: UTF8.self).contains("su-late") } ?? false }
        #expect(forwarded.count == 1)
        let sourceOffset = forwarded.first?.header(KafkaRecords.Header.sourceOffset).map { String(decoding: $0, as: UTF8.self) }
        #expect(sourceOffset == String(report.offset))
    }
}
