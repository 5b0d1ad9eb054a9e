import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Testing

/// `fleetctl produce --in-order` keeps the file's order as the delivery worker sees it (issue 16:
/// demo traffic produced in one go had intents overtake the sign-up forwarded by the ingest
/// stage): a record another worker reads first is committed by it, so its effect is in the
/// inbox, before the next line goes.
@Suite("produce --in-order", .enabled(if: FleetHarness.brokerAvailable), .timeLimit(.minutes(3)))
struct ProduceOrderTests {
    static let signUp = #"{"at":"2026-11-21T08:00:00Z","topic":"rin.app.activity","key":"ord","value":{"v":1,"type":"user.signed_up","id":"su-ord","user_id":"ord","time_zone":"Europe/Lisbon"}}"#
    static let intent = #"{"at":"2026-11-21T08:00:01Z","topic":"rin.delivery.inbox","key":"ord","value":{"v":1,"type":"intent","id":"i-ord","user_id":"ord","notification":"score.updated","category":"SCORE","data":{"score":70},"source":{"topic":"rin.score.batches","partition":0,"offset":1}}}"#

    @Test("a sign-up through the ingest stage lands in the inbox before the intent on the next line")
    func inOrder() async throws {
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let worker = try fleet.start(.delivery, ExplainScenario.engine)
        defer { worker.cancel() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("order-\(UUID().uuidString.prefix(8)).jsonl")
        try (Self.signUp + "\n" + Self.intent + "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let environment = fleet.environment(for: .delivery)

        let produced = try await FleetctlErrorTests.fleetctl(["produce", "--in-order", "--timeout", "60", file.path], environment)
        #expect(produced.status == 0, "\(produced.stdout) \(produced.stderr)")
        #expect(produced.stdout.contains("sent 2 records, in order"), "\(produced.stdout)")
        let inbox = try await fleet.read(Topics.deliveryInbox, count: 2, timeout: .seconds(30))
        let types = inbox.sorted { $0.offset < $1.offset }.compactMap { $0.value.flatMap { try? RecordCodec.decode($0) }?.type }
        #expect(types == ["user.signed_up", "intent"], "\(types)")
    }

    @Test("without the worker --in-order stops at the first record it would wait for, naming it (exit 75)")
    func noWorker() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("order-\(UUID().uuidString.prefix(8)).jsonl")
        try (Self.signUp + "\n" + Self.intent + "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        // --timeout bounds reaching the brokers too: 3 s once ran out on a fresh-clone CI pass
        // while the suites' start starved the broker, before the commit wait it is meant for.
        let produced = try await FleetctlErrorTests.fleetctl(["produce", "--in-order", "--timeout", "15", file.path], fleet.environment(for: .delivery))
        #expect(produced.status == 75, "\(produced.stderr)")
        #expect(produced.stderr.contains("line 1: group \(fleet.namespace.prefix)delivery-worker has not committed"), "\(produced.stderr)")
    }
}
