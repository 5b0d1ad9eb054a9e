import FleetWorkers
import Synchronization

/// The port a server bound, for callers that ask before (or after) the bind happened: port 0
/// picks a free port, and tests and logs need to know which one.
final class BoundPort: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Int, any Error>])
        case resolved(Result<Int, any Error>)
    }

    private let state = Mutex(State.waiting([]))

    /// The first resolution wins; a server that is run again keeps reporting its first port.
    func resolve(_ result: Result<Int, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int, any Error>] in
            guard case .waiting(let waiters) = state else { return [] }
            state = .resolved(result)
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    func value() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let known = state.withLock { state -> Result<Int, any Error>? in
                switch state {
                case .resolved(let result):
                    return result
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                }
            }
            if let known { continuation.resume(with: known) }
        }
    }
}
