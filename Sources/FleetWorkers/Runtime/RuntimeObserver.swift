/// What the runtime reports as it works: the seam between the fold loop and the metrics it
/// exports (`WorkerMetrics` implements it; tests can count calls).
///
/// Every call is cheap and never fails: observing must not slow or stop processing.
public protocol RuntimeObserver: Sendable {
    func recordIn(topic: String, count: Int)
    func recordOut(topic: String, count: Int)
    func setLag(topic: String, partition: Int32, lag: Int64)
    func commitLatency(_ seconds: Double, guarantee: String)
    func commit(result: String)
    func restoring(partitions: Int)
    func restoredStates(count: Int)
    func restoreRate(statesPerSecond: Double)
    func ready(_ ready: Bool)
    func decision(outcome: String, reason: String, rule: String)
    func delivery(category: String, channel: String)
    func securityDeliveryLatency(seconds: Double)
    func deadLetter(topic: String)
    func rebalance(kind: String)
    func tickWritten()
    func timerLateness(seconds: Double)
    func partitionCountMismatch(topic: String, active: Bool)
}
