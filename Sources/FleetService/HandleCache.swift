import FleetWorkers
import Synchronization

/// Metric handles by label values, made on first use and reused after: creating a handle goes
/// through the backend's registry (a lock, label validation, an allocation), which the hot path
/// — a call per consumed batch and topic — must not pay every time.
final class HandleCache<Key: Hashable & Sendable, Handle: Sendable>: Sendable {
    private let handles = Mutex<[Key: Handle]>([:])
    private let make: @Sendable (Key) -> Handle

    init(_ make: @escaping @Sendable (Key) -> Handle) {
        self.make = make
    }

    subscript(key: Key) -> Handle {
        handles.withLock { handles in
            if let handle = handles[key] { return handle }
            let handle = make(key)
            handles[key] = handle
            return handle
        }
    }

    /// Forgets the handle for `key` and returns it (so the caller can destroy it), if any.
    func remove(_ key: Key) -> Handle? {
        handles.withLock { $0.removeValue(forKey: key) }
    }
}
