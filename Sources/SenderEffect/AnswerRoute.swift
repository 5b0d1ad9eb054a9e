import Synchronization

/// Where the effect stage writes its answers: the physical generation of `rin.sender.inbox`
/// that producers write into now (the generation registry's `writeGeneration` for the sender,
/// see `fleetctl partitions migrate`). Set by whoever follows the registry (the sender-worker's
/// `InboxRouteFollower`), read by the stage once per batch.
///
/// An answer written into the previous generation while the route moves is not lost: the
/// sender's runtime carries records arriving in its old log over into the new one. The route
/// must move, though, before a later migration retires that log.
public final class AnswerRoute: Sendable {
    private let topic: Mutex<String?>

    /// - Parameter topic: the inbox when it is known from the start (tests, a fixed layout);
    ///   nil until the first `set`, before which `current()` waits.
    public init(_ topic: String? = nil) { self.topic = Mutex(topic) }

    /// Points the answers at `topic`; returns whether that changed where they go.
    @discardableResult
    public func set(_ topic: String) -> Bool {
        self.topic.withLock { current in
            defer { current = topic }
            return current != topic
        }
    }

    /// The inbox answers go to now, waiting (at startup only) until it is known.
    public func current() async throws -> String {
        while true {
            if let topic = topic.withLock({ $0 }) { return topic }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
