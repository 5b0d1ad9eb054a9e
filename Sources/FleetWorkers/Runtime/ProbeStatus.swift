/// What `/healthz` answers: whether the process is still worth keeping.
///
/// Kubernetes restarts a pod whose liveness probe fails, so `failed` is for states that a
/// restart fixes (the consume loop died, the producer is fenced for good) — never for a slow
/// broker or a restore in progress, which belong in `Readiness`.
public enum HealthStatus: Sendable, Hashable {
    case alive
    /// The message is the probe's response body, so an operator reading `kubectl describe`
    /// sees why the pod was restarted.
    case failed(String)
}

/// What `/readyz` answers: ready, or every reason the worker is not.
///
/// Ready means "no reasons" — one representation, so "not ready for no reason" cannot be
/// built. Each reason becomes one line of the 503 body, so an operator sees at a glance which
/// partitions are still restoring or which topic stopped.
public struct Readiness: Sendable, Hashable {
    /// One thing keeping the worker from being ready, as a single line of text.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        public var description: String

        /// Line breaks would split one reason over several body lines, so they become spaces.
        public init(_ description: String) {
            self.description = description.split(whereSeparator: \.isNewline).joined(separator: " ")
        }

        /// A partition whose user states are still being read back from the state topic,
        /// e.g. `restoring rin.delivery.inbox[3]`.
        public static func restoring(topic: String, partition: Int) -> Reason {
            Reason("restoring \(topic)[\(partition)]")
        }

        /// A topic no longer processed because its partition count changed (DESIGN: no silent
        /// reshuffle), e.g. `topic rin.app.activity: partition count changed 8 → 12`.
        public static func partitionCountChanged(topic: String, from expected: Int, to actual: Int) -> Reason {
            Reason("topic \(topic): partition count changed \(expected) → \(actual)")
        }
    }

    /// Empty when ready.
    public var reasons: [Reason]
    /// What the worker is doing, shown after "ready" or after the reasons (one line each),
    /// e.g. `folds rin.delivery.inbox partitions [0,1] (2 of 4)`; no effect on readiness.
    public var details: [String]

    public init(reasons: [Reason], details: [String] = []) {
        self.reasons = reasons
        self.details = details.map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") }
    }

    public static let ready = Readiness(reasons: [])

    /// Not ready: at least one reason, so this never builds `ready` by accident.
    public static func notReady(_ first: Reason, _ more: Reason...) -> Readiness {
        Readiness(reasons: [first] + more)
    }

    public var isReady: Bool { reasons.isEmpty }
}
