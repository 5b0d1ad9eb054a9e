import FleetModel
import FleetWorkers
import FleetService
import Synchronization

/// What tests follow of a runtime's reports: rebalance events, the last lag per partition and
/// how many records of each topic were folded; the other reports are not needed here.
final class TestObserver: RuntimeObserver {
    private struct Seen {
        var rebalances = 0
        var lags: [String: [Int: Int64]] = [:]
        var recordsIn: [String: Int] = [:]
    }

    private let seen = Mutex(Seen())

    var rebalances: Int { seen.withLock { $0.rebalances } }
    /// The last `fleet_consumer_lag` reported for the logical topic's partition (nil when none,
    /// or cleared at a revocation).
    func lag(_ topic: String, partition: Int) -> Int64? { seen.withLock { $0.lags[topic]?[partition] } }

    /// How many records of the logical topic the runtime has reported in (for a worker's own
    /// log: folded, re-delivered copies not counted).
    func recordsIn(_ topic: String) -> Int { seen.withLock { $0.recordsIn[topic, default: 0] } }

    func rebalance(kind: WorkerMetrics.RebalanceKind) { seen.withLock { $0.rebalances += 1 } }
    func setLag(topic: String, partition: Int, lag: Int64) { seen.withLock { $0.lags[topic, default: [:]][partition] = lag } }
    func clearLag(topic: String, partition: Int) { seen.withLock { $0.lags[topic]?[partition] = nil } }
    func recordIn(topic: String, count: Int) { seen.withLock { $0.recordsIn[topic, default: 0] += count } }
    func recordOut(topic: String, count: Int) {}
    func commitLatency(_ seconds: Double, guarantee: DeliveryGuarantee) {}
    func commit(result: WorkerMetrics.CommitResult) {}
    func restoring(partitions: Int) {}
    func foldedPartitions(_ count: Int) {}
    func restoredStates(count: Int) {}
    func restoreRate(statesPerSecond: Double) {}
    func ready(_ isReady: Bool) {}
    func decision(outcome: DecisionOutcome, reason: String?, rule: String, count: Int) {}
    func delivery(category: String, channel: DeliveryChannel, count: Int) {}
    func securityDeliveryLatency(seconds: Double) {}
    func deadLetter(topic: String) {}
    func tickWritten() {}
    func timerLateness(seconds: Double) {}
    func partitionCountMismatch(topic: String, active: Bool) {}
}
