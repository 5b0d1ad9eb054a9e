import Synchronization

/// A value one task hands to another exactly once: the lane hands its sealed part of a unit
/// to the commit in flight, the flight hands its outcome to whoever lands it. Whoever awaits
/// `value` before it is there waits; afterwards it is returned at once.
final class Handoff<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Mutex(State())

    init() {}

    /// A handoff that already holds `value`.
    init(_ value: Value) {
        state.withLock { $0.value = value }
    }

    /// Hands over `value`; a second call is ignored (the first value stands).
    func fulfil(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// Whether the value is there (`value` would not wait).
    var isFulfilled: Bool { state.withLock { $0.value != nil } }

    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Value? in
                    if let value = state.value { return value }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
