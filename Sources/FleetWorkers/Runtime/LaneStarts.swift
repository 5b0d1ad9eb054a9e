import DequeModule
import FleetModel
import Synchronization

/// New lanes on their way to the task group that runs them (`WorkerRuntime`).
///
/// Not an `AsyncStream`: its iterator ends as soon as the waiting task is cancelled, so a lane
/// started after a cancellation (a partition whose restore finished while the worker stopped)
/// would never run, and the last unit's seal, which waits for every lane, would wait forever.
/// Here only `finish()` ends the sequence: a cancelled run still runs the lanes it starts, and
/// they end when the run discards them.
final class LaneStarts<P: UserProcessor>: Sendable {
    private struct State {
        var lanes: Deque<FoldLane<P>> = []
        var waiter: CheckedContinuation<FoldLane<P>?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    init() {}

    /// Hands `lane` to the group; ignored once finished (the run is over and discards its lanes).
    func start(_ lane: FoldLane<P>) {
        let waiter = state.withLock { state -> CheckedContinuation<FoldLane<P>?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter.take() { return waiter }
            state.lanes.append(lane)
            return nil
        }
        waiter?.resume(returning: lane)
    }

    /// Ends the sequence: `next()` returns the lanes still queued, then nil.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<FoldLane<P>?, Never>? in
            state.finished = true
            return state.waiter.take()
        }
        waiter?.resume(returning: nil)
    }

    /// The next lane to run; nil once finished. One caller at a time (the runtime's lane group).
    func next() async -> FoldLane<P>? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> FoldLane<P>?? in
                if let lane = state.lanes.popFirst() { return .some(lane) }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
