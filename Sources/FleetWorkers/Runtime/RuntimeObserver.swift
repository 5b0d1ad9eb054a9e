public import FleetModel

/// What the runtime reports as it works: the seam between the fold loop and the metrics it
/// exports (`WorkerMetrics` implements it; tests and benchmarks can count calls).
///
/// Every call is cheap and never fails: observing must not slow or stop processing.
public protocol RuntimeObserver: Sendable {
    func recordIn(topic: String, count: Int)
    func recordOut(topic: String, count: Int)
    func setLag(topic: String, partition: Int, lag: Int64)
    func clearLag(topic: String, partition: Int)
    func commitLatency(_ seconds: Double, guarantee: DeliveryGuarantee)
    func commit(result: WorkerMetrics.CommitResult)
    func restoring(partitions: Int)
    func restoredStates(count: Int)
    func restoreRate(statesPerSecond: Double)
    func ready(_ isReady: Bool)
    func decision(outcome: DecisionOutcome, reason: String?, rule: String)
    func delivery(category: String, channel: DeliveryChannel)
    func securityDeliveryLatency(seconds: Double)
    func deadLetter(topic: String)
    func rebalance(kind: WorkerMetrics.RebalanceKind)
    func tickWritten()
    func timerLateness(seconds: Double)
    func partitionCountMismatch(topic: String, active: Bool)
}

extension WorkerMetrics: RuntimeObserver {}

/// Observers that care about a few reports (tests, benchmarks) implement only those.
extension RuntimeObserver {
    public func recordIn(topic: String, count: Int) {}
    public func recordOut(topic: String, count: Int) {}
    public func setLag(topic: String, partition: Int, lag: Int64) {}
    public func clearLag(topic: String, partition: Int) {}
    public func commitLatency(_ seconds: Double, guarantee: DeliveryGuarantee) {}
    public func commit(result: WorkerMetrics.CommitResult) {}
    public func restoring(partitions: Int) {}
    public func restoredStates(count: Int) {}
    public func restoreRate(statesPerSecond: Double) {}
    public func ready(_ isReady: Bool) {}
    public func decision(outcome: DecisionOutcome, reason: String?, rule: String) {}
    public func delivery(category: String, channel: DeliveryChannel) {}
    public func securityDeliveryLatency(seconds: Double) {}
    public func deadLetter(topic: String) {}
    public func rebalance(kind: WorkerMetrics.RebalanceKind) {}
    public func tickWritten() {}
    public func timerLateness(seconds: Double) {}
    public func partitionCountMismatch(topic: String, active: Bool) {}
}
