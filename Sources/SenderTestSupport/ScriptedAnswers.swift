import Synchronization

/// The answers a test scripted for a stand-in provider, per key (an APNs device token, an FCM
/// registration token, an email address), given out in order; a key with none left gets nil,
/// which the stand-ins answer as a success.
public final class ScriptedAnswers<Answer: Sendable>: Sendable {
    private let queues = Mutex<[String: [Answer]]>([:])

    public init() {}

    /// Appends `answers` to what `key` is answered with.
    public func append(_ answers: [Answer], for key: String) {
        queues.withLock { $0[key, default: []] += answers }
    }

    /// The next answer scripted for `key`, taken off the script; nil when none is left.
    public func next(for key: String) -> Answer? {
        queues.withLock { queues in
            guard let next = queues[key]?.first else { return nil }
            queues[key]?.removeFirst()
            if queues[key]?.isEmpty == true { queues[key] = nil }
            return next
        }
    }
}
