import PropertyBased
import Testing

@testable import FleetWorkers

/// Runtime II's lifecycles as values (issue 19): every transition of a folded partition's and of
/// the worker's lifecycle, the awkward ones included, decided and checked without a broker.
@Suite struct PartitionLifecycleTests {
    typealias Action = PartitionLifecycle.Action

    @Test("assigned: restoring under its attempt, the state is asked for")
    func assigned() {
        let (lifecycle, actions) = PartitionLifecycle.assigned(attempt: 3)
        #expect(lifecycle.phase == .restoring(attempt: 3))
        #expect(actions == [.restore(attempt: 3)])
        #expect(lifecycle.awaits(attempt: 3) && !lifecycle.awaits(attempt: 2))
        #expect(!lifecycle.isActive && lifecycle.lane == nil)
    }

    @Test("the state for the current attempt starts a lane; one for another attempt is dropped")
    func stateReady() {
        var lifecycle = PartitionLifecycle.assigned(attempt: 3).lifecycle
        #expect(lifecycle.stateReady(attempt: 2, lane: 7) == [.dropStale(attempt: 2)])
        #expect(lifecycle.phase == .restoring(attempt: 3))
        #expect(lifecycle.stateReady(attempt: 3, lane: 7) == [.startLane(lane: 7)])
        #expect(lifecycle.phase == .active(lane: 7) && lifecycle.lane == 7 && lifecycle.isActive)
        // A second result for the same attempt (a duplicate hand-over) changes nothing.
        #expect(lifecycle.stateReady(attempt: 3, lane: 8) == [.dropStale(attempt: 3)])
        #expect(lifecycle.lane == 7)
    }

    @Test("a failed restore is asked again only while its attempt is current")
    func restoreFailed() {
        var lifecycle = PartitionLifecycle.assigned(attempt: 1).lifecycle
        #expect(lifecycle.restoreFailed(attempt: 1) == [.restore(attempt: 1)])
        _ = lifecycle.rewind(attempt: 2)
        #expect(lifecycle.restoreFailed(attempt: 1) == [.dropStale(attempt: 1)])
        _ = lifecycle.stateReady(attempt: 2, lane: 4)
        #expect(lifecycle.restoreFailed(attempt: 2) == [.dropStale(attempt: 2)])
    }

    @Test("a rewind of an active partition discards its lane, pauses it and restores under a new attempt")
    func rewindActive() {
        var lifecycle = PartitionLifecycle.assigned(attempt: 1).lifecycle
        _ = lifecycle.stateReady(attempt: 1, lane: 5)
        #expect(lifecycle.rewind(attempt: 2) == [.discardLane(lane: 5), .pause, .restore(attempt: 2)])
        #expect(lifecycle.phase == .restoring(attempt: 2))
        // The restore of the first attempt, finishing late, is stale.
        #expect(lifecycle.stateReady(attempt: 1, lane: 6) == [.dropStale(attempt: 1)])
        #expect(lifecycle.stateReady(attempt: 2, lane: 6) == [.startLane(lane: 6)])
    }

    @Test("a rewind while restoring restarts the restore under the new attempt; the old result is stale")
    func rewindWhileRestoring() {
        var lifecycle = PartitionLifecycle.assigned(attempt: 1).lifecycle
        #expect(lifecycle.rewind(attempt: 2) == [.pause, .restore(attempt: 2)])
        #expect(lifecycle.stateReady(attempt: 1, lane: 3) == [.dropStale(attempt: 1)])
        #expect(lifecycle.awaits(attempt: 2))
    }

    @Test("revoked while active: the (committed) fold is parked; revoked while restoring: nothing to keep, the late result is stale")
    func revoke() {
        var active = PartitionLifecycle.assigned(attempt: 1).lifecycle
        _ = active.stateReady(attempt: 1, lane: 9)
        #expect(active.revoke() == [.parkFold(lane: 9)])
        #expect(active.phase == .revoked)

        var restoring = PartitionLifecycle.assigned(attempt: 1).lifecycle
        #expect(restoring.revoke() == [])
        #expect(restoring.phase == .revoked)
        #expect(restoring.stateReady(attempt: 1, lane: 2) == [.dropStale(attempt: 1)])
        #expect(restoring.restoreFailed(attempt: 1) == [.dropStale(attempt: 1)])
        #expect(restoring.rewind(attempt: 2) == [])
    }

    @Test("lost while active: the lane and its uncommitted work go, nothing is parked; lost while restoring: nothing to do")
    func lose() {
        var active = PartitionLifecycle.assigned(attempt: 1).lifecycle
        _ = active.stateReady(attempt: 1, lane: 4)
        #expect(active.lose() == [.discardLane(lane: 4)])
        #expect(active.phase == .lost)
        #expect(active.rewind(attempt: 2) == [])
        #expect(active.revoke() == [])
        #expect(active.phase == .lost && active.hasLeft)

        var restoring = PartitionLifecycle.assigned(attempt: 1).lifecycle
        #expect(restoring.lose() == [])
        #expect(restoring.stateReady(attempt: 1, lane: 2) == [.dropStale(attempt: 1)])
    }

    /// One event of the lifecycle, for the property test.
    enum Event: CaseIterable {
        case readyCurrent, readyStale, failCurrent, rewind, revoke, lose
    }

    @Test("any sequence of events: a lane starts only for the attempt awaited, at most one lane runs, and nothing starts after the partition left")
    func invariants() async {
        await propertyCheck(count: 400, input: Gen.int(in: 0...5).array(of: 0...24)) { indices in
            let events = indices.map { Event.allCases[$0] }
            var (lifecycle, _) = PartitionLifecycle.assigned(attempt: 1)
            var attempt = 1
            var lane = 0
            var running: Int?
            var left = false
            for event in events {
                let before = lifecycle
                let actions: [Action]
                // The attempt a state hand-over is for.
                var handedOver = attempt
                switch event {
                case .readyCurrent:
                    lane += 1
                    actions = lifecycle.stateReady(attempt: attempt, lane: lane)
                case .readyStale:
                    lane += 1
                    handedOver = attempt - 1
                    actions = lifecycle.stateReady(attempt: handedOver, lane: lane)
                case .failCurrent:
                    actions = lifecycle.restoreFailed(attempt: attempt)
                case .rewind:
                    attempt += 1
                    actions = lifecycle.rewind(attempt: attempt)
                case .revoke:
                    actions = lifecycle.revoke()
                case .lose:
                    actions = lifecycle.lose()
                }
                for action in actions {
                    switch action {
                    case .startLane(let started):
                        #expect(before.awaits(attempt: handedOver) && running == nil && !left && started == lane)
                        running = started
                    case .discardLane(let discarded), .parkFold(let discarded):
                        #expect(discarded == running)
                        running = nil
                    case .restore(let asked):
                        #expect(asked == attempt && !left)
                    case .pause, .dropStale:
                        break
                    }
                }
                if event == .revoke || event == .lose { left = true }
                #expect(lifecycle.lane == running)
                #expect(left == lifecycle.hasLeft)
            }
        }
    }
}

@Suite struct WorkerLifecycleTests {
    @Test("graceful shutdown: the loops stop, the last unit commits, the group is left with a flush")
    func shutdown() {
        var lifecycle = WorkerLifecycle()
        #expect(lifecycle.started() == [] && lifecycle.phase == .running)
        #expect(lifecycle.loopEnded(.shutdown) == [.stopLoops, .commitLastUnit])
        #expect(lifecycle.phase == .draining(.shutdown))
        #expect(lifecycle.lastUnitDone(failure: nil) == [.close(flush: true)])
        #expect(lifecycle.phase == .stopped(.shutdown))
    }

    @Test("a generation change mid-unit: the unit commits on the old layout, then the run starts again on the new one")
    func generationChange() {
        let map = GenerationMap(entries: [.delivery: GenerationEntry(worker: .delivery, generation: 2, partitions: 6, phase: .cutover)])
        var lifecycle = WorkerLifecycle()
        _ = lifecycle.started()
        #expect(lifecycle.loopEnded(.generationChanged(map, reason: "moved")) == [.stopLoops, .commitLastUnit])
        #expect(lifecycle.lastUnitDone(failure: nil) == [.close(flush: true), .restart(map)])
    }

    @Test("a failure commits nothing more and closes without a flush")
    func failure() {
        var lifecycle = WorkerLifecycle()
        _ = lifecycle.started()
        #expect(lifecycle.loopEnded(.failed("fenced")) == [.stopLoops])
        #expect(lifecycle.lastUnitDone(failure: nil) == [.close(flush: false), .fail("fenced")])
        #expect(lifecycle.phase == .stopped(.failed("fenced")))
    }

    @Test("SIGTERM during a restore, before the first assignment finished: the same orderly end (nothing folded, nothing lost)")
    func shutdownWhileStarting() {
        var lifecycle = WorkerLifecycle()
        #expect(lifecycle.loopEnded(.shutdown) == [.stopLoops, .commitLastUnit])
        #expect(lifecycle.started() == [])
        #expect(lifecycle.lastUnitDone(failure: nil) == [.close(flush: true)])
    }

    @Test("the first ending wins; a failing last commit turns any ending into a failure and never restarts")
    func firstEndingWins() {
        let map = GenerationMap()
        var lifecycle = WorkerLifecycle()
        _ = lifecycle.started()
        _ = lifecycle.loopEnded(.generationChanged(map, reason: "moved"))
        #expect(lifecycle.loopEnded(.shutdown) == [])
        #expect(lifecycle.loopEnded(.failed("late")) == [])
        #expect(lifecycle.lastUnitDone(failure: "commit refused") == [.close(flush: false), .fail("commit refused")])
        #expect(lifecycle.phase == .stopped(.failed("commit refused")))
        #expect(lifecycle.lastUnitDone(failure: nil) == [])
        #expect(lifecycle.loopEnded(.shutdown) == [])
    }
}
