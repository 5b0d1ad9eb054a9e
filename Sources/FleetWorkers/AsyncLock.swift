import Synchronization

/// A FIFO lock for async code: holds across suspension points, unlike `Mutex`.
///
/// The worker holds it while a batch is processed, produced and committed; the rebalance
/// handler takes it before it lets a partition go, so a revoked partition's last batch is always
/// committed first (at-least-once without duplicates beyond the uncommitted tail).
final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    func lock() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { s -> Bool in
                if s.locked {
                    s.waiters.append(continuation)
                    return false
                }
                s.locked = true
                return true
            }
            if acquired { continuation.resume() }
        }
    }

    func unlock() {
        let next = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty {
                s.locked = false
                return nil
            }
            return s.waiters.removeFirst()  // ownership passes straight to the next waiter
        }
        next?.resume()
    }

    func withLock<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await lock()
        defer { unlock() }
        return try await body()
    }
}
