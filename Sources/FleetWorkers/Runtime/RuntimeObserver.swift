public import FleetModel

/// What the runtime reports as it works: the seam between the fold loop and the metrics it
/// exports (`WorkerMetrics` implements it; tests and benchmarks can count calls).
///
/// Every call is cheap and never fails: observing must not slow or stop processing. There are
/// deliberately no default implementations: a conformer whose method signature drifted would
/// otherwise compile and silently observe nothing.
public protocol RuntimeObserver: Sendable {
    func recordIn(topic: String, count: Int)
    func recordOut(topic: String, count: Int)
    func setLag(topic: String, partition: Int, lag: Int64)
    func clearLag(topic: String, partition: Int)
    func commitLatency(_ seconds: Double, guarantee: DeliveryGuarantee)
    func commit(result: RuntimeEvents.CommitResult)
    func restoring(partitions: Int)
    func foldedPartitions(_ count: Int)
    func restoredStates(count: Int)
    func restoreRate(statesPerSecond: Double)
    func ready(_ isReady: Bool)
    /// `count` decisions with these labels (a lane reports what it counted once per batch).
    func decision(outcome: DecisionOutcome, reason: String?, rule: String, count: Int)
    /// `count` deliveries with these labels.
    func delivery(category: String, channel: DeliveryChannel, count: Int)
    func securityDeliveryLatency(seconds: Double)
    func deadLetter(topic: String)
    func rebalance(kind: RuntimeEvents.RebalanceKind)
    func tickWritten()
    func timerLateness(seconds: Double)
    func partitionCountMismatch(topic: String, active: Bool)
    func unitFailures(consecutive: Int)
    func failingInput(topic: String, partition: Int, offset: Int64)
    func failingInputCleared()
    func inputQuarantined(topic: String)
    /// A partition of `topic` (the folded log, logical name) stopped fetching because its lane
    /// is full.
    func lanePaused(topic: String)
}

/// Observers that follow only throughput (benchmarks, tests) need not follow failed units.
extension RuntimeObserver {
    public func unitFailures(consecutive: Int) {}
    public func failingInput(topic: String, partition: Int, offset: Int64) {}
    public func failingInputCleared() {}
    public func inputQuarantined(topic: String) {}
    public func foldedPartitions(_ count: Int) {}
    public func lanePaused(topic: String) {}
}

/// The kinds of events a `RuntimeObserver` is told about.
public enum RuntimeEvents {
    /// How a commit unit ended.
    public enum CommitResult: String, Sendable, Hashable, CaseIterable {
        case committed, aborted
    }

    /// A consumer-group rebalance event.
    public enum RebalanceKind: String, Sendable, Hashable, CaseIterable {
        case assigned, revoked, lost
    }
}
