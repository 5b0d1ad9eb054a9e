import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Testing

/// Scaling the delivery worker under load (DESIGN.md "Runtime" and "Operating it": whole user
/// partitions per member, partitions move with their state): members join, one leaves with
/// SIGTERM, one is killed, one comes back, while intents keep arriving. After every step each
/// member holds whole user partitions (partition p of the ingest topic and of the inbox) and
/// its share; the output must be the fault-free one, and a user's budget spent before their
/// partition moved must still be spent after it.
///
/// Several members at once in one group run on the local broker (Tansu) with the fleet's
/// settings: the range assignor and dynamic membership (measured with
/// scripts/repro/group-scenario: joins settle in about 2 s, a SIGTERM hands over in about 3 s,
/// a SIGKILL after the 2 s session timeout). Static membership (`group.instance.id`) is what
/// Tansu does not hold — the second static member's assignment is lost at once and later
/// members never get one — so test instances run without `FLEET_INSTANCE_ID`
/// (`WorkerInstance.environment`).
@Suite("Scaling the delivery worker", .enabled(if: FleetHarness.brokerAvailable))
struct ScalingTests {
    /// Each of `members` holds whole user partitions — the same partitions of the ingest topic
    /// and of the inbox — no partition is held by two, every partition is held, and the
    /// numbers of partitions held are `shares` (in any order). Read from the rebalance events
    /// each member logged.
    static func expectWholeUserPartitions(
        _ members: [WorkerInstance], shares: [Int], in fleet: FleetHarness, step: String
    ) {
        let inbox = fleet.namespace.physical(Worker.delivery.foldedTopic)
        let activity = fleet.namespace.physical(Topics.appActivity)
        var holder: [Int32: String] = [:]
        var counts: [Int] = []
        for member in members {
            let assignment = member.assignment()
            let folded = assignment[inbox] ?? []
            #expect(assignment[activity] ?? [] == folded,
                    "\(step): \(member.name) holds \(activity) \((assignment[activity] ?? []).sorted()) but folds \(folded.sorted())")
            for partition in folded {
                #expect(holder[partition] == nil, "\(step): partition \(partition) folded by \(holder[partition] ?? "") and \(member.name)")
                holder[partition] = member.name
            }
            counts.append(folded.count)
        }
        #expect(counts.sorted() == shares.sorted(), "\(step): shares \(members.map { "\($0.name)=\(($0.assignment()[inbox] ?? []).sorted())" })")
        #expect(Set(holder.keys) == Set(0..<fleet.partitions), "\(step): partitions nobody folds: \(Set(0..<fleet.partitions).subtracting(holder.keys).sorted())")
    }

    /// Waits until `members` together hold every inbox partition; returns how long that took.
    static func awaitCovered(_ members: [WorkerInstance], in fleet: FleetHarness, timeout: Duration = .seconds(60)) async throws -> Duration {
        let inbox = fleet.namespace.physical(Worker.delivery.foldedTopic)
        let started = ContinuousClock.now
        while true {
            let held = members.reduce(into: Set<Int32>()) { $0.formUnion($1.assignment()[inbox] ?? []) }
            if held == Set(0..<fleet.partitions) { return ContinuousClock.now - started }
            try #require(ContinuousClock.now - started < timeout, "partitions unowned after \(timeout): \(held.sorted())")
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test(
        "two members, a third joins, one leaves by SIGTERM, one is killed, one comes back, under load: whole user partitions per member and even shares after every step, the fault-free output, every security intent delivered, budgets kept across the moves (P-BUD-1, P-IDEM-1)",
        .timeLimit(.minutes(6)))
    func scaleUnderLoad() async throws {
        let fleet = try await FleetHarness.make(partitions: 4)
        defer { Task { await fleet.tearDown() } }
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        let workload = InboxWorkload.budgetAcrossMoves(users: 24, partitions: 4, middlePhases: 2)
        let names = ["scale-a", "scale-b", "scale-c", "scale-d"]
        let executable = try ShutdownTests.executable("delivery-worker")
        func launch(_ name: String) throws -> WorkerInstance {
            try .process(name, .delivery, executable: executable, in: fleet)
        }
        var instances = [try launch(names[0]), try launch(names[1])]
        defer { for instance in instances { instance.abandon() } }
        func report(_ line: String) { FileHandle.standardError.write(Data("ScalingTests: \(line)\n".utf8)) }

        // Phase 1: two members spend every user's budget for the day, two user partitions each.
        try await fleet.stream(workload.phases[0])
        var produced = workload.phases[0].count
        try await fleet.awaitDecisions(of: try await fleet.reference(inboxRecords: produced, engine: engine))
        try await WorkerInstance.awaitSettled(instances)
        Self.expectWholeUserPartitions(instances, shares: [2, 2], in: fleet, step: "two members")
        try await fleet.markChangelog(of: .delivery, nonce: "budget-spent")

        // Phase 2: a third member joins while the stream goes on: 2/1/1.
        instances.append(try launch(names[2]))
        let joined = ContinuousClock.now
        try await fleet.stream(workload.phases[1], chunk: 6, pause: .milliseconds(250))
        produced += workload.phases[1].count
        try await fleet.awaitMarker(of: .delivery, by: instances[2], after: "budget-spent")
        report("third member restored its first partition \(ContinuousClock.now - joined) after it started")
        try await WorkerInstance.awaitSettled(instances)
        Self.expectWholeUserPartitions(instances, shares: [2, 1, 1], in: fleet, step: "three members")
        try await fleet.awaitDecisions(of: try await fleet.reference(inboxRecords: produced, engine: engine))
        try await fleet.markChangelog(of: .delivery, nonce: "third-joined")

        // Phase 3: the first member leaves gracefully (SIGTERM) mid-stream: 2/2.
        async let streamedLeave: Void = fleet.stream(workload.phases[2], chunk: 6, pause: .milliseconds(250))
        let terminated = ContinuousClock.now
        await instances[0].stop()
        let handover = try await Self.awaitCovered(Array(instances[1...2]), in: fleet)
        report("SIGTERM → every partition assigned to the survivors: \(ContinuousClock.now - terminated) (\(handover) after the leaver exited)")
        try await streamedLeave
        produced += workload.phases[2].count
        try await WorkerInstance.awaitSettled(Array(instances[1...2]))
        Self.expectWholeUserPartitions(Array(instances[1...2]), shares: [2, 2], in: fleet, step: "after SIGTERM")
        try await fleet.markChangelog(of: .delivery, nonce: "first-left")

        // Phase 4: the second member is killed (SIGKILL: no commit, no leave) and a fourth
        // comes back while the last of the stream arrives: 2/2 again.
        async let streamedKill: Void = fleet.stream(workload.phases[3], chunk: 6, pause: .milliseconds(250))
        try await instances[1].sigkill()
        instances.append(try launch(names[3]))
        try await streamedKill
        produced += workload.phases[3].count
        try await WorkerInstance.awaitSettled([instances[2], instances[3]])
        Self.expectWholeUserPartitions([instances[2], instances[3]], shares: [2, 2], in: fleet, step: "after SIGKILL and a new member")

        let reference = try await fleet.reference(inboxRecords: produced, engine: engine)
        let intents = Set(workload.phases.joined().map(\.record.id))
        let decisions = try await fleet.expectOutputs(equal: reference, intents: intents)

        for instance in [instances[2], instances[3]] { await instance.stop() }
        #expect(instances.map(\.ended) == [.graceful, .killed, .graceful, .graceful])

        // Who restored what, from the restore markers.
        try await fleet.markChangelog(of: .delivery, nonce: "end")
        let markers = try await fleet.changelogMarkers(of: .delivery, upTo: "end")
        let owners = PartitionOwners(markers: markers, instances: instances)
        #expect(owners.restored(by: names[2], after: "budget-spent").count >= 1, "the third member took no partition: \(markers)")
        #expect(owners.restored(by: names[3], after: "first-left").count >= 1, "the member that came back took no partition: \(markers)")
        let leftBehind = owners.lastOwned(by: names[0], before: "first-left")
        #expect(leftBehind.allSatisfy { !owners.restorers(of: $0, after: "third-joined").subtracting([names[0]]).isEmpty },
                "partitions of the leaver nobody took over: \(markers)")
        let moved = owners.moved(after: "budget-spent")
        #expect(moved.count >= 2, "expected the join and the departures to move partitions: \(markers)")

        let byIntent = Dictionary(decisions.map { ($0.intentId, $0) }) { first, _ in first }
        // Every security intent is delivered (P-ACC), through every move.
        let security = intents.filter { $0.contains("signin") || $0.hasPrefix("close-") }
        #expect(security.count == 24 * 6 + 4)
        for id in security.sorted() {
            #expect(byIntent[id]?.outcome == .delivered, "\(id): \(String(describing: byIntent[id]))")
        }
        // P-BUD-1 across the moves: the deliveries decided before them still fill the day.
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
        .timeLimit(.minutes(5)))
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
