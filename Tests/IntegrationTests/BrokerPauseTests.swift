import DeliveryPolicy
import FleetModel
import FleetTestSupport
import FleetWorkers
import Foundation
import Testing

/// The local broker's process, for tests that freeze it (`FLEET_KAFKA_BROKER_PID`, exported by
/// `scripts/test` and `scripts/broker env`). Same rule as `TestBrokerEnvironment`: without it
/// the suite is skipped with a loud banner, except under `CI=true` where it runs and fails.
enum BrokerProcess {
    static var pid: pid_t? {
        ProcessInfo.processInfo.environment["FLEET_KAFKA_BROKER_PID"].flatMap { pid_t($0) }.flatMap { $0 > 0 ? $0 : nil }
    }

    static var isAvailable: Bool {
        guard FleetHarness.brokerAvailable else { return false }
        if pid != nil || TestBrokerEnvironment.isCI { return true }
        FileHandle.standardError.write(Data("""
            ****************************************************************************
            * BrokerPauseTests: FLEET_KAFKA_BROKER_PID is not set — SKIPPING the tests
            * that freeze the broker. Run them alone (they stall every client of it):
            *   eval "$(scripts/broker env)" && swift test --filter BrokerPauseTests
            ****************************************************************************

            """.utf8))
        return false
    }

    /// Freezes the broker (SIGSTOP) for `duration`, then lets it go on (SIGCONT) — also when
    /// the wait is cancelled, so a failing test never leaves it frozen.
    static func pause(for duration: Duration) async throws {
        let pid = try #require(pid, "FLEET_KAFKA_BROKER_PID must name the broker's process (scripts/broker env)")
        try #require(kill(pid, 0) == 0, "no process \(pid) to pause (FLEET_KAFKA_BROKER_PID is stale)")
        try #require(kill(pid, SIGSTOP) == 0)
        defer { kill(pid, SIGCONT) }
        try? await Task.sleep(for: duration)
    }
}

/// The broker freezes (SIGSTOP) for several seconds in the middle of a stream and comes back:
/// the workers carry on without a restart — through whatever the pause costs them (expired
/// group sessions, lost partitions, failed commits, timed-out requests) — and the output is the
/// fault-free one.
///
/// Run alone (`scripts/test` does): freezing the broker stalls every other test using it.
@Suite("Broker pause", .enabled(if: BrokerProcess.isAvailable), .serialized)
struct BrokerPauseTests {
    @Test(
        "the broker frozen for 7 s mid-stream: workers recover without a restart, output equals the fault-free run (P-IDEM-1)",
        .timeLimit(.minutes(3)))
    func brokerPauseMidStream() async throws {
        let fleet = try await FleetHarness.make(partitions: 4)
        defer { Task { await fleet.tearDown() } }
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        let workload = InboxWorkload.budgetAcrossMoves(users: 16, partitions: 4, middlePhases: 1)
        // One member: the local broker cannot keep a group of several stable (ScalingTests).
        let instances = [try WorkerInstance.inProcess("pause-a", .delivery, engine, in: fleet)]
        defer { for instance in instances { instance.abandon() } }

        try await fleet.stream(workload.phases[0])
        var produced = workload.phases[0].count
        try await fleet.awaitDecisions(of: try await fleet.reference(inboxRecords: produced, engine: engine))

        // The broker freezes a second into the middle phase's stream.
        async let streamed: Void = fleet.stream(workload.phases[1], chunk: 4, pause: .milliseconds(200))
        try await Task.sleep(for: .seconds(1))
        try await BrokerProcess.pause(for: .seconds(7))
        try await streamed
        produced += workload.phases[1].count
        try await fleet.stream(workload.phases[2])
        produced += workload.phases[2].count

        let reference = try await fleet.reference(inboxRecords: produced, engine: engine)
        try await fleet.expectOutputs(equal: reference, intents: Set(workload.phases.joined().map(\.record.id)))
        for instance in instances {
            #expect(instance.ended == nil, "\(instance.name) stopped during the run: \(String(describing: instance.ended))")
        }
        for instance in instances {
            await instance.stop()
            #expect(instance.ended == .graceful, "\(instance.name) ended \(String(describing: instance.ended))")
        }
    }
}
