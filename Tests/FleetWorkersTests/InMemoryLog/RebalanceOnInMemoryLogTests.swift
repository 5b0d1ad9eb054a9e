import FleetLogTesting
import FleetModel
import FleetWorkers
import Synchronization
import Testing

extension RuntimeOnInMemoryLogTests {
    enum Move: String, CaseIterable, Sendable {
        /// A second instance joins: the first revokes everything, both are assigned a range.
        case join
        /// The first instance's session expires at the step: its partitions are taken without a
        /// revocation (it hears `lost` later, a zombie until then), and a second instance joins.
        case lost
    }

    @Test("partitions moved between two instances at any step: nothing lost, nothing changed (P-IDEM-1)",
          arguments: DeliveryGuarantee.allCases, Move.allCases)
    func rebalanceAtEveryStep(guarantee: DeliveryGuarantee, move: Move) async throws {
        let reference = try await Self.uninterrupted(guarantee)
        var step = 1
        while true {
            let fleet = try InMemoryFleet(guarantee: guarantee)
            let joined = Mutex<InMemoryFleet.Instance?>(nil)
            let startFailure = Mutex<String?>(nil)
            fleet.log.inject(.interrupt { _ in
                if move == .lost { fleet.log.expireSession(of: "a") }
                do {
                    let second = try fleet.start("b")
                    joined.withLock { $0 = second }
                } catch {
                    startFailure.withLock { $0 = "\(error)" }
                }
            }, instance: "a", atStep: step)
            let first = try fleet.start("a")
            _ = try await fleet.drive(until: "the input to be committed (\(move) at step \(step))")
            let second = joined.withLock { $0 }
            if let second {
                // Both members settle before they stop, so the move is complete.
                try await fleet.wait(for: "the group to settle (\(move) at step \(step))") {
                    fleet.log.isStable && fleet.log.assignments.values.filter { !$0.isEmpty }.count == 2 && fleet.caughtUp
                }
                try await fleet.stop(second)
            }
            try await fleet.stop(first)
            #expect(startFailure.withLock { $0 } == nil)
            guard second != nil else { break }
            try Self.check(fleet, against: reference, "\(guarantee.rawValue), \(move) at step \(step) (\(fleet.log.steps(of: "a")[step - 1]))")
            step += 1
        }
        #expect(step > 8, "only \(step - 1) steps: the input must make several units")
    }
}
