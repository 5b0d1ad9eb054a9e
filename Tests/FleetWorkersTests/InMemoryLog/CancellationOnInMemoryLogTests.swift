import DeliveryPolicy
import FleetLogTesting
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Synchronization
import Testing

/// A runtime whose task is cancelled (a service group giving up on graceful shutdown, a test
/// stopping an instance) must end, not hang: a partition whose restore finishes after the
/// cancellation still gets its lane, which the run's last seal and discard then reach.
@Suite("Runtime on the in-memory log: cancellation")
struct CancellationOnInMemoryLogTests {
    @Test("a runtime cancelled while it restores a partition ends", arguments: DeliveryGuarantee.allCases)
    func cancelledWhileRestoring(guarantee: DeliveryGuarantee) async throws {
        // Where the first restore read falls in an instance's steps.
        let probe = try InMemoryFleet(guarantee: guarantee)
        let probed = try probe.start("a")
        _ = try await probe.drive(until: "the probe run")
        try await probe.stop(probed)
        let steps = probe.log.steps(of: "a")
        let restoreStep = try #require(steps.firstIndex { if case .restoreRead = $0 { true } else { false } }) + 1

        let fleet = try InMemoryFleet(guarantee: guarantee)
        let running = Mutex<Task<Void, any Error>?>(nil)
        fleet.log.inject(.interrupt({ _ in running.withLock { $0 }?.cancel() }), instance: "a", atStep: restoreStep)
        let instance = try fleet.start("a") { instance in running.withLock { $0 = instance.task } }
        let ended = Mutex(false)
        Task {
            _ = await instance.task.result
            ended.withLock { $0 = true }
        }
        try await fleet.wait(for: "the cancelled instance to end", timeout: .seconds(120)) { ended.withLock { $0 } }
        #expect(instance.task.isCancelled)
    }
}
