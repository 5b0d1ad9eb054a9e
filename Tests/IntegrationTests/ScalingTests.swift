import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Testing

/// Scaling the delivery worker under load (DESIGN.md "Operating it": partitions move with their
/// state): two instances, a third joins, one leaves, while intents keep arriving. The output must
/// be the fault-free one, and a user's budget spent before their partition moved must still be
/// spent after it.
@Suite("Scaling the delivery worker", .enabled(if: FleetHarness.brokerAvailable))
struct ScalingTests {
    /// Whether the broker coordinates groups of several members reliably. Tansu (the local test
    /// broker) does not: measured, a cooperative-sticky group of two or three members never
    /// settles (a new empty rebalance every ~6 s, heartbeats answered "unknown member" right
    /// after a successful SyncGroup), and a member that leaves or dies while a rebalance is
    /// under way stays the group's leader in every JoinGroup answer, so no assignment is ever
    /// synced again and partitions stay unowned. So the test that keeps several instances in
    /// the group at once runs only on request (`FLEET_TEST_MULTI_MEMBER_GROUPS=1`, e.g. against
    /// Apache Kafka from deploy/); the handover test below moves every partition between
    /// instances one member at a time, which Tansu handles, and runs everywhere.
    static var multiMemberGroups: Bool {
        if ProcessInfo.processInfo.environment["FLEET_TEST_MULTI_MEMBER_GROUPS"] == "1" { return true }
        FileHandle.standardError.write(Data("""
            ****************************************************************************
            * ScalingTests: FLEET_TEST_MULTI_MEMBER_GROUPS is not 1 — SKIPPING the test
            * with several instances in the group at once (the local broker, Tansu,
            * wedges such groups; see ScalingTests.multiMemberGroups). The one-member-
            * at-a-time handover test still runs.
            ****************************************************************************

            """.utf8))
        return false
    }

    /// How the instance that leaves goes.
    enum Departure: String, CustomStringConvertible, Sendable {
        /// SIGTERM: the leaver finishes its batch, commits and leaves the group.
        case graceful
        /// SIGKILL: the leaver is killed (no commit, no leave: the group notices
        /// after session.timeout.ms and its uncommitted tail is redone by the new owner).
        case sigkill

        var description: String { rawValue }
    }

    @Test(
        "two instances, a third joins, one leaves, under load: the fault-free output, one decision per intent, budgets kept across the move (P-BUD-1, P-IDEM-1)",
        .enabled(if: multiMemberGroups), .timeLimit(.minutes(3)), arguments: [Departure.graceful, .sigkill])
    func scaleUnderLoad(departure: Departure) async throws {
        let fleet = try await FleetHarness.make(partitions: 6)
        defer { Task { await fleet.tearDown() } }
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        let workload = InboxWorkload.budgetAcrossMoves(users: 30, partitions: 6, middlePhases: 1)
        let names = ["scale-a", "scale-b", "scale-c"]
        let executable = try ShutdownTests.executable("delivery-worker")
        func launch(_ name: String) throws -> WorkerInstance {
            try .process(name, .delivery, executable: executable, in: fleet)
        }
        var instances = [try launch(names[0]), try launch(names[1])]
        defer { for instance in instances { instance.abandon() } }

        // Phase 1: two instances spend every user's budget for the day.
        try await fleet.stream(workload.phases[0])
        var produced = workload.phases[0].count
        try await fleet.awaitDecisions(of: try await fleet.reference(inboxRecords: produced, engine: engine))
        try await fleet.markChangelog(of: .delivery, nonce: "budget-spent")
        try await WorkerInstance.awaitSettled(instances)

        // Phase 2: a third instance joins while the stream goes on; it must take partitions over.
        instances.append(try launch(names[2]))
        try await fleet.stream(workload.phases[1], chunk: 5, pause: .milliseconds(250))
        produced += workload.phases[1].count
        try await fleet.awaitMarker(of: .delivery, by: instances[2], after: "budget-spent")
        try await WorkerInstance.awaitSettled(instances)
        try await fleet.awaitDecisions(of: try await fleet.reference(inboxRecords: produced, engine: engine))
        try await fleet.markChangelog(of: .delivery, nonce: "third-joined")

        // Phase 3: the first instance leaves while the rest of the stream arrives.
        async let streamed: Void = fleet.stream(workload.phases[2], chunk: 5, pause: .milliseconds(250))
        switch departure {
        case .graceful: await instances[0].stop()
        case .sigkill: try await instances[0].sigkill()
        }
        try await streamed
        produced += workload.phases[2].count

        let reference = try await fleet.reference(inboxRecords: produced, engine: engine)
        let intents = Set(workload.phases.joined().map(\.record.id))
        let decisions = try await fleet.expectOutputs(equal: reference, intents: intents)

        for instance in instances.dropFirst() { await instance.stop() }
        for instance in instances {
            let expected: WorkerInstance.Ending = instance === instances[0] && departure == .sigkill ? .killed : .graceful
            #expect(instance.ended == expected, "\(instance.name) ended \(String(describing: instance.ended))")
        }

        // Which partitions changed owner after the budget was spent, from the restore markers.
        try await fleet.markChangelog(of: .delivery, nonce: "end")
        let markers = try await fleet.changelogMarkers(of: .delivery, upTo: "end")
        let owners = PartitionOwners(markers: markers, instances: instances)
        #expect(owners.restored(by: names[2], after: "budget-spent").count >= 1, "the third instance took no partition: \(markers)")
        let leftBehind = owners.lastOwned(by: names[0], before: "third-joined")
        #expect(leftBehind.allSatisfy { !owners.restorers(of: $0, after: "third-joined").subtracting([names[0]]).isEmpty },
                "partitions of the leaver nobody took over: \(markers)")
        let moved = owners.moved(after: "budget-spent")
        #expect(moved.count >= 2, "expected the join and the departure to move partitions: \(markers)")

        // P-BUD-1 across the move: the three deliveries decided before it still fill the day.
        let byIntent = Dictionary(decisions.map { ($0.intentId, $0) }) { first, _ in first }
        let movedUsers = workload.users.filter { moved.contains(workload.partition(of: $0)) }
        #expect(!movedUsers.isEmpty)
        for user in movedUsers {
            for spent in InboxWorkload.budgetSpendingIds(user) {
                #expect(byIntent[spent]?.outcome == .delivered, "\(spent): \(String(describing: byIntent[spent]))")
            }
            let milestone = byIntent[InboxWorkload.milestoneId(user)]
            #expect(milestone?.outcome == .suppressed && milestone?.rule == "P-BUD-1",
                    "\(user) on moved partition \(workload.partition(of: user)): \(String(describing: milestone))")
        }
    }

    @Test(
        "every partition handed over twice, gracefully then by SIGKILL mid-stream: the fault-free output, one decision per intent, budgets kept across both moves (P-BUD-1, P-IDEM-1)",
        .timeLimit(.minutes(3)))
    func handoverUnderLoad() async throws {
        let fleet = try await FleetHarness.make(partitions: 4)
        defer { Task { await fleet.tearDown() } }
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        let workload = InboxWorkload.budgetAcrossMoves(users: 16, partitions: 4, middlePhases: 1)
        let executable = try ShutdownTests.executable("delivery-worker")
        let names = ["handover-a", "handover-b", "handover-c"]
        var instances: [WorkerInstance] = []
        defer { for instance in instances { instance.abandon() } }

        // Phase 1: the first instance spends every user's budget, then stops gracefully.
        instances.append(try .process(names[0], .delivery, executable: executable, in: fleet))
        try await fleet.stream(workload.phases[0])
        var produced = workload.phases[0].count
        try await fleet.awaitDecisions(of: try await fleet.reference(inboxRecords: produced, engine: engine))
        try await fleet.markChangelog(of: .delivery, nonce: "budget-spent")
        await instances[0].stop()

        // Phase 2: the second takes every partition over and is killed while the stream flows,
        // leaving an uncommitted tail for the third to redo.
        instances.append(try .process(names[1], .delivery, executable: executable, in: fleet))
        try await fleet.awaitMarker(of: .delivery, by: instances[1], after: "budget-spent")
        async let streamed: Void = fleet.stream(workload.phases[1], chunk: 4, pause: .milliseconds(200))
        try await Task.sleep(for: .seconds(2))
        try await instances[1].sigkill()
        try await streamed
        produced += workload.phases[1].count
        try await fleet.markChangelog(of: .delivery, nonce: "second-killed")

        // Phase 3: the third takes over once the broker has dropped the dead member.
        try await Task.sleep(for: .seconds(4))
        instances.append(try .process(names[2], .delivery, executable: executable, in: fleet))
        try await fleet.stream(workload.phases[2], chunk: 4, pause: .milliseconds(200))
        produced += workload.phases[2].count

        let reference = try await fleet.reference(inboxRecords: produced, engine: engine)
        let decisions = try await fleet.expectOutputs(equal: reference, intents: Set(workload.phases.joined().map(\.record.id)))
        await instances[2].stop()
        #expect(instances.map(\.ended) == [.graceful, .killed, .graceful])

        // Every partition moved twice after the budget was spent: to the second instance, then
        // (after the kill) to the third.
        try await fleet.markChangelog(of: .delivery, nonce: "end")
        let owners = PartitionOwners(markers: try await fleet.changelogMarkers(of: .delivery, upTo: "end"), instances: instances)
        for partition in 0..<fleet.partitions {
            #expect(owners.owner(of: partition, before: "budget-spent") == names[0])
            #expect(owners.restorers(of: partition, after: "second-killed") == [names[2]], "partition \(partition): \(owners.markers)")
        }
        #expect(owners.restored(by: names[1], after: "budget-spent") == Array(0..<fleet.partitions))

        // P-BUD-1 across both moves: the three deliveries decided by the first instance fill the day.
        let byIntent = Dictionary(decisions.map { ($0.intentId, $0) }) { first, _ in first }
        for user in workload.users {
            for spent in InboxWorkload.budgetSpendingIds(user) {
                #expect(byIntent[spent]?.outcome == .delivered, "\(spent): \(String(describing: byIntent[spent]))")
            }
            let milestone = byIntent[InboxWorkload.milestoneId(user)]
            #expect(milestone?.outcome == .suppressed && milestone?.rule == "P-BUD-1", "\(user): \(String(describing: milestone))")
        }
    }
}

/// Who restored which partition when, read from the restore markers of `<worker>.state` (each
/// carries `<instance id>-<pid>-<attempt>`) and the test's own marks between them.
struct PartitionOwners {
    let markers: [Int32: [String]]
    let instances: [WorkerInstance]

    private func instance(of nonce: String) -> String? {
        instances.first { $0.wrote(marker: nonce) }?.name
    }

    /// Instances that restored `partition` after the test's mark `mark`.
    func restorers(of partition: Int32, after mark: String) -> Set<String> {
        let list = markers[partition] ?? []
        guard let index = list.firstIndex(of: mark) else { return [] }
        return Set(list[(index + 1)...].compactMap(instance))
    }

    /// The instance that last restored `partition` before the mark `mark`.
    func owner(of partition: Int32, before mark: String) -> String? {
        let list = markers[partition] ?? []
        guard let index = list.firstIndex(of: mark) else { return nil }
        return list[..<index].compactMap(instance).last
    }

    func restored(by instance: String, after mark: String) -> [Int32] {
        markers.keys.sorted().filter { restorers(of: $0, after: mark).contains(instance) }
    }

    func lastOwned(by instance: String, before mark: String) -> [Int32] {
        markers.keys.sorted().filter { owner(of: $0, before: mark) == instance }
    }

    /// Partitions restored after `mark` by an instance other than their owner before it.
    func moved(after mark: String) -> Set<Int32> {
        Set(markers.keys.filter { partition in
            guard let owner = owner(of: partition, before: mark) else { return false }
            return !restorers(of: partition, after: mark).subtracting([owner]).isEmpty
        })
    }
}
