/// The worker's lifecycle on one topic layout, as a value: starting → running → draining →
/// stopped. Each event returns what the runtime must do, so how a run ends — graceful shutdown,
/// a generation change, a failure, one arriving while another is being handled — is decided
/// here and tested without a broker. `WorkerRuntime` performs the actions.
///
/// The first ending wins: a SIGTERM while the run already drains for a generation change, or a
/// loop failing while the last unit commits, changes nothing about how the run ends, except that
/// a failure of the last commit makes the ending a failure (nothing may be claimed committed).
struct WorkerLifecycle: Equatable, Sendable {
    /// Why a run ends. Errors are values here, not control flow.
    enum Ending: Equatable, Sendable {
        /// Graceful shutdown (SIGTERM): commit, leave the group, exit.
        case shutdown
        /// The registry moved this worker's layout (`GenerationRegistry`): commit, leave the
        /// group, start again on the current layout in the same process.
        case generationChanged(GenerationMap, reason: String)
        /// The worker cannot go on: nothing more is committed.
        case failed(String)
    }

    enum Phase: Equatable, Sendable {
        case starting
        case running
        case draining(Ending)
        case stopped(Ending)
    }

    enum Action: Equatable, Sendable {
        /// Stop the consume, housekeeping, lag and restore loops.
        case stopLoops
        /// Commit the open unit (and the one in flight) before leaving.
        case commitLastUnit
        /// Close the consumer (leaving the group) and the producers, flushing what they hold
        /// when the run did not fail.
        case close(flush: Bool)
        /// Report the failure on `/healthz` and end the process with it.
        case fail(String)
        /// Run again on `map`, the generation registry's current layout.
        case restart(GenerationMap)
    }

    private(set) var phase: Phase = .starting

    /// Subscribed and the loops started.
    mutating func started() -> [Action] {
        guard phase == .starting else { return [] }
        phase = .running
        return []
    }

    /// A loop ended the run (the consume loop on shutdown, housekeeping on a generation change,
    /// any loop on an error). Only the first ending counts.
    mutating func loopEnded(_ ending: Ending) -> [Action] {
        switch phase {
        case .starting, .running:
            phase = .draining(ending)
            if case .failed = ending { return [.stopLoops] }
            return [.stopLoops, .commitLastUnit]
        case .draining, .stopped:
            return []
        }
    }

    /// The last unit committed (`failure` nil) or could not be committed; for a failed run
    /// there was no last commit, and this is called with nil.
    mutating func lastUnitDone(failure: String?) -> [Action] {
        guard case .draining(var ending) = phase else { return [] }
        if let failure { ending = .failed(failure) }
        phase = .stopped(ending)
        switch ending {
        case .shutdown:
            return [.close(flush: true)]
        case .generationChanged(let map, _):
            return [.close(flush: true), .restart(map)]
        case .failed(let message):
            return [.close(flush: false), .fail(message)]
        }
    }
}
