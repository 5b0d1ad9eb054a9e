import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Logging
import Testing

/// `fleet_consumer_lag` on the real broker: the leader's high watermark minus the offset the
/// member committed, right after records arrive and right after a restart (issue 16: the gauge
/// read 0 after a burst of 90k records, and the real lag only seconds later).
@Suite("Consumer lag", .enabled(if: FleetHarness.brokerAvailable), .serialized, .timeLimit(.minutes(3)))
struct ConsumerLagTests {
    /// A delivery worker on `fleet` reporting to `recorder`; commits only every `commitEvery`.
    static func start(
        _ fleet: FleetHarness, _ recorder: TestObserver, commitEvery: String
    ) throws -> Task<Void, any Error> {
        var logger = Logger(label: "test.lag")
        logger.logLevel = .warning
        let settings = try fleet.settings(for: .delivery, [
            "FLEET_COMMIT_INTERVAL_MS": commitEvery, "FLEET_TICK_INTERVAL_MS": "0",
        ])
        let runtime = WorkerRuntime(settings: settings, processor: RuntimeTests.engine, observer: recorder, logger: logger)
        return Task { try await runtime.run() }
    }

    /// Produces `count` intents one send at a time: the local broker states a partition's high
    /// watermark as the start of its last batch + 1 (DESIGN.md "Tests and the local broker"),
    /// so one record per batch keeps its watermark true and the figures below exact.
    static func produce(_ fleet: FleetHarness, user: String, from first: Int, count: Int) async throws {
        for i in first..<(first + count) {
            let intent = Fixtures.dedupIntent(id: "\(user)-lag\(i)", user: user, count: Int64(i))
            try await fleet.produce([(.intent(intent), Timestamp.at("2026-11-21T09:00:00Z") + TimeSpan(milliseconds: Int64(i) * 1_000))],
                                    to: Topics.deliveryInbox)
        }
    }

    /// Polls `recorder` until partition 0's lag is `expected`; returns the last value seen.
    static func awaitLag(_ recorder: TestObserver, _ expected: Int64, within limit: Duration = .seconds(60)) async -> Int64? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if recorder.lag(Topics.deliveryInbox, partition: 0) == expected { return expected }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return recorder.lag(Topics.deliveryInbox, partition: 0)
    }

    /// Polls `recorder` until `count` records of the delivery inbox were folded; returns the
    /// last count seen.
    static func awaitFolded(_ recorder: TestObserver, _ count: Int, within limit: Duration = .seconds(60)) async -> Int {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, recorder.recordsIn(Topics.deliveryInbox) < count {
            try? await Task.sleep(for: .milliseconds(50))
        }
        return recorder.recordsIn(Topics.deliveryInbox)
    }

    @Test("records folded but not yet committed count as lag; after a restart the lag counts from the committed offset, not from the start of the partition")
    func lagFromLeaderAndCommittedOffset() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }

        // A unit that stays open for ten minutes: the 40 intents are read and folded, yet none
        // is committed, so all 40 are lag.
        let first = TestObserver()
        let worker = try Self.start(fleet, first, commitEvery: "600000")
        try await Self.produce(fleet, user: "u-lag", from: 0, count: 40)
        let lagged = await Self.awaitLag(first, 40)
        #expect(lagged == 40, "lag after 40 uncommitted records: \(lagged.map(String.init) ?? "never reported")")
        // The lag says nothing about how far the fold has got: the stop below commits what was
        // folded, so it must wait for all 40, or the restart begins with the rest as lag.
        let folded = await Self.awaitFolded(first, 40)
        #expect(folded == 40, "records folded before the stop: \(folded)")

        // A graceful stop commits the unit; the next incarnation restores at offset 40 and,
        // before its own first commit, counts lag from there: 15 new records are 15 of lag, not 55.
        worker.cancel()
        _ = await worker.result
        let second = TestObserver()
        let restarted = try Self.start(fleet, second, commitEvery: "600000")
        defer { restarted.cancel() }
        let restored = await Self.awaitLag(second, 0)
        #expect(restored == 0, "lag after the restore: \(restored.map(String.init) ?? "never reported")")
        try await Self.produce(fleet, user: "u-lag", from: 40, count: 15)
        let fresh = await Self.awaitLag(second, 15)
        #expect(fresh == 15, "lag after 15 more records: \(fresh.map(String.init) ?? "never reported")")
    }
}
