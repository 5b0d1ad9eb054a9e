import Foundation
import Synchronization

/// A dedicated thread that calls `step` until stopped. librdkafka's serving calls
/// (`rd_kafka_poll`, consumer polls) block for their timeout, so they live here and never on the
/// Swift concurrency pool.
final class ServiceThread: Sendable {
    private struct State {
        var stopRequested = false
        var exited = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Starts the thread. `step` returns `false` to end the loop by itself.
    init(name: String, step: @escaping @Sendable () -> Bool) {
        let thread = Thread { [self] in
            while !state.withLock({ $0.stopRequested }) {
                if !step() { break }
            }
            let waiters = state.withLock { state in
                state.exited = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
        thread.name = name
        thread.start()
    }

    var isStopRequested: Bool { state.withLock { $0.stopRequested } }

    /// Asks the loop to end after the current step.
    func requestStop() {
        state.withLock { $0.stopRequested = true }
    }

    /// Asks the loop to end and waits until the thread has left it.
    func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyExited = state.withLock { state in
                state.stopRequested = true
                if state.exited { return true }
                state.waiters.append(continuation)
                return false
            }
            if alreadyExited { continuation.resume() }
        }
    }

    /// Blocking variant of `stop` for deinitializers (never called on the thread itself).
    func stopAndWaitBlocking() {
        requestStop()
        while !state.withLock({ $0.exited }) { usleep(1000) }
    }
}
