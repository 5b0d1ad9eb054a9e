import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Testing

/// Issue 16: `fleetctl decisions` without `--user` prints every decision of the topic in time
/// order, joined with deliveries and intents; its memory does not grow with the topic (sorted
/// runs spill to temporary files, joins are merges). 200 000 decisions of 50 000 users, half of
/// them delivered (200 000 deliveries and intents beside them), written directly (no worker
/// runs), in an order that is not the time order; the command's peak resident memory stays
/// under the million-record suite's ceiling and every decision is printed, in order.
/// FLEET_MILLION_FLEETCTL measures another build the same way; FLEET_SKIP_MILLION=1 skips it.
@Suite("decisions of a large topic under a memory ceiling", .enabled(if: FleetHarness.brokerAvailable), .timeLimit(.minutes(5)))
struct ManyDecisionsTests {
    static let decisions = 200_000
    static let users = 50_000

    @Test("fleetctl decisions prints 200 000 decisions in time order, joined, under 200 MB")
    func manyDecisions() async throws {
        guard ProcessInfo.processInfo.environment["FLEET_SKIP_MILLION"] != "1" else { return }
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let producer = try fleet.bulkProducer()
        let base = MillionRecordTests.base
        let chunk = 25_000
        for first in stride(from: 0, to: Self.decisions, by: chunk) {
            var batch: [ProducerRecord] = []
            batch.reserveCapacity(3 * chunk)
            for index in first..<first + chunk {
                let user = "u-\(index % Self.users)"
                // Stamped in a shuffled order (a bijection of 0..<decisions), a second apart.
                let at = base + Int64((index * 7_919) % Self.decisions) * 1_000
                let intent = Intent(
                    id: "i-\(index)", userId: user, notification: "score.updated", category: "SCORE", data: [:],
                    source: SourceCoordinates(topic: "rin.score.batches", partition: 0, offset: Int64(index)))
                batch.append(Self.record(fleet, Topics.deliveryInbox, user, .intent(intent), at: at))
                if index % 2 == 0 {
                    batch.append(Self.record(fleet, Topics.deliveries, user, .delivery(Delivery(
                        id: "dl-\(index)", userId: user, notificationId: "n-\(index)", channel: .push, notification: "score.updated",
                        category: "SCORE", title: "Your score", body: "Your score went up to \(index % 100).", deepLink: "rin://score",
                        mergedIntents: [intent.id])), at: at))
                }
                batch.append(Self.record(fleet, Topics.decisions, user, .decision(Decision(
                    id: "d-\(index)", userId: user, intentId: intent.id, outcome: index % 2 == 0 ? .delivered : .suppressed,
                    reason: index % 2 == 0 ? "within_daily_budget" : "daily_budget", notificationId: index % 2 == 0 ? "n-\(index)" : nil,
                    rule: "P-BUD-1")), at: at))
            }
            _ = try await producer.send(batch)
        }
        await producer.close()

        let fleetctl = try ProcessInfo.processInfo.environment["FLEET_MILLION_FLEETCTL"].map { URL(fileURLWithPath: $0) }
            ?? ShutdownTests.executable("fleetctl")
        let run = try await ChildProcess.run(fleetctl, ["decisions", "--timeout", "240"], environment: fleet.environment(for: .delivery))
        print("many decisions: fleetctl decisions (\(Self.decisions) decisions, \(Self.decisions / 2) deliveries, \(Self.decisions) intents): exit \(run.status), \(run.seconds) s, max RSS \(run.maxRSSBytes / 1_048_576) MB")
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == Self.decisions + 1)
        #expect(lines.first?.hasPrefix("time") == true)
        // In time order: the n-th row is the decision stamped n seconds after the base.
        let inverse = Self.inverseOfShuffle()
        for (row, line) in lines.dropFirst().enumerated() where row % 997 == 0 || row == Self.decisions - 1 {
            let index = inverse[row]
            let delivered = index % 2 == 0
            let expected = [
                Timestamp(millisecondsSinceEpoch: base + Int64(row) * 1_000).rfc3339, "u-\(index % Self.users)", "score.updated",
                delivered ? "delivered" : "suppressed", delivered ? "within_daily_budget" : "daily_budget", "P-BUD-1",
            ]
            let cells = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            #expect(Array(cells.prefix(6)) == expected, "row \(row): \(line)")
            // The text column: the delivered body, or empty.
            #expect(line.hasSuffix(delivered ? "P-BUD-1  Your score went up to \(index % 100)." : "P-BUD-1  "), "row \(row): \(line)")
        }
        #expect(run.maxRSSBytes < MillionRecordTests.ceilingBytes)
    }

    /// For each second after the base, the index of the decision stamped then.
    static func inverseOfShuffle() -> [Int] {
        var inverse = Array(repeating: 0, count: decisions)
        for index in 0..<decisions { inverse[(index * 7_919) % decisions] = index }
        return inverse
    }

    static func record(_ fleet: FleetHarness, _ topic: String, _ user: String, _ record: FleetRecord, at: Int64) -> ProducerRecord {
        ProducerRecord(
            topic: fleet.namespace.physical(topic), partition: 0, key: user, value: RecordCodec.encode(record), timestamp: at)
    }
}
