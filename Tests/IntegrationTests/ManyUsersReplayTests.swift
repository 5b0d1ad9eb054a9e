import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Testing

/// Issue 16: replay's start state holds only what the re-fold can touch. A partition whose
/// history holds 200 000 users' images (all before the range, no timer set) and whose log is
/// 20 000 ticks: `fleetctl replay` of the last 360 records keeps the images encoded and decodes
/// into the fold only the users of the range's records and those with a timer due in it (none
/// here), so its peak resident memory stays under the million-record suite's ceiling (it grew
/// with the partition's users before). That the re-fold is the same from those users alone is
/// `ReplayPropertyTests`' and the replay suites' job. The images are written directly (no
/// worker runs). FLEET_MILLION_FLEETCTL measures another build the same way.
@Suite("Replay's start state on a partition of many users", .enabled(if: FleetHarness.brokerAvailable), .timeLimit(.minutes(5)))
struct ManyUsersReplayTests {
    static let records = 20_000
    static let users = 200_000

    @Test("a replay of 360 records among 200 000 users' history images is identical and stays under 200 MB")
    func manyUsers() async throws {
        guard ProcessInfo.processInfo.environment["FLEET_SKIP_MILLION"] != "1" else { return }
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let inbox = fleet.namespace.physical(Topics.deliveryInbox)
        let state = fleet.namespace.physical(Worker.delivery.stateTopic)
        let history = fleet.namespace.physical(Worker.delivery.historyTopic)
        let producer = try fleet.bulkProducer()
        _ = try await producer.send((0..<Self.records).map { offset in
            let at = MillionRecordTests.time(of: offset).millisecondsSinceEpoch
            return ProducerRecord(topic: inbox, partition: 0, key: nil, value: Array(#"{"v":1,"type":"tick","id":"t-\#(offset)"}"#.utf8), timestamp: at)
        })
        _ = try await producer.send(stride(from: 9_999, to: Self.records, by: 10_000).map { offset in
            ChangelogRecords.position(logTime: MillionRecordTests.time(of: offset), inputOffset: Int64(offset), topic: state, partition: 0)
        })
        // Every user's image, each in a unit of its own, spread over the log before the range.
        let image = try StateCoding.encode(DeliveryState())
        let rangeStart = Self.records - 360
        for first in stride(from: 0, to: Self.users, by: 50_000) {
            _ = try await producer.send((first..<first + 50_000).map { index in
                let offset = Int64(index * (rangeStart - 100) / Self.users)
                return ChangelogRecords.historyImage(
                    userId: "p-\(index)", after: image, unitStart: offset, changed: [offset],
                    logTime: MillionRecordTests.time(of: Int(offset)), inputTopic: Topics.deliveryInbox, topic: history, partition: 0)
            })
        }
        await producer.close()

        let fleetctl = try ProcessInfo.processInfo.environment["FLEET_MILLION_FLEETCTL"].map { URL(fileURLWithPath: $0) }
            ?? ShutdownTests.executable("fleetctl")
        let replay = try await ChildProcess.run(
            fleetctl,
            ["replay", "--worker", "delivery-worker", "--partition", "0", "--from", "\(rangeStart)", "--to", "\(Self.records)", "--timeout", "120"],
            environment: fleet.environment(for: .delivery))
        print("many users: replay offsets \(rangeStart)..<\(Self.records) among \(Self.users) users' history images: exit \(replay.status), \(replay.seconds) s, max RSS \(replay.maxRSSBytes / 1_048_576) MB")
        #expect(replay.status == 0, "\(replay.stdout) \(replay.stderr)")
        #expect(replay.stdout.contains("offsets \(rangeStart)..<\(Self.records) (360 records)"), "\(replay.stdout)")
        #expect(replay.stdout.contains("identical"), "\(replay.stdout)")
        #expect(replay.maxRSSBytes < MillionRecordTests.ceilingBytes)
    }
}
