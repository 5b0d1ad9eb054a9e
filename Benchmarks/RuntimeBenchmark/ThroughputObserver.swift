import DeliveryWorkload
import FleetModel
import FleetWorkers
import Foundation
import Synchronization

/// Times the fold from the runtime's own reports: the clock starts when the first inbox batch
/// is folded and stops at the first successful commit after all `expected` records were folded
/// (the point where a restarted worker would not see them again: same end as `tp_passthru`,
/// which stops once every copy is acknowledged and the offsets are committed).
///
/// Also collects what the restore reports, for the second runtime of a run, and what the
/// security-latency mode waits for (readiness) and compares with (the runtime's own latency).
final class ThroughputObserver: RuntimeObserver {
    struct Snapshot {
        /// Inbox records that end the throughput measurement.
        var expected = 0
        /// Records of the inbox folded so far.
        var folded = 0
        /// Records folded in the first batch: folded before the clock started.
        var firstBatch = 0
        var started: ContinuousClock.Instant?
        var startCPU: Double = 0
        /// When the last of `expected` records was folded: `finished` minus this is the tail the
        /// commit cadence adds after the fold is done.
        var allFolded: ContinuousClock.Instant?
        var finished: ContinuousClock.Instant?
        var finishCPU: Double = 0
        var out: [String: Int] = [:]
        var commits = 0
        var aborted = 0
        var commitSeconds: [Double] = []
        var restoredPartitions = 0
        var restoredStates = 0
        var restoreRates: [Double] = []
        var allRestored: ContinuousClock.Instant?
        var rebalances: [String] = []
        /// What the runtime last reported to `/readyz`: joined, every partition restored.
        var isReady = false
        /// Partitions the runtime folds.
        var foldedPartitions = 0
        /// The runtime's own view of SECURITY latency (`securityDeliveryLatency`): from the
        /// intent's log time to the fold emitting its delivery, before the commit.
        var securityFoldSeconds: [Double] = []
    }

    let restoringPartitions: Int
    private let state: Mutex<Snapshot>
    /// What a deployed worker reports to besides (its `WorkerMetrics`), so the benchmark pays
    /// for the metrics as production does; nil measures the runtime alone.
    private let production: (any RuntimeObserver)?

    /// - Parameters:
    ///   - expected: inbox records that end the throughput measurement.
    ///   - restoringPartitions: partitions whose restore ends the restore measurement.
    ///   - production: the worker's own metrics, told everything this observer is told.
    init(expected: Int, restoringPartitions: Int, production: (any RuntimeObserver)?) {
        self.restoringPartitions = restoringPartitions
        self.production = production
        state = Mutex(Snapshot(expected: expected))
    }

    /// Starts the throughput measurement over, for the next `expected` inbox records (the
    /// latency mode's burst after its warm-up); what the runtime reported about readiness,
    /// partitions and restores stays.
    func restart(expecting expected: Int) {
        state.withLock { s in
            var fresh = Snapshot(expected: expected)
            fresh.restoredPartitions = s.restoredPartitions
            fresh.restoredStates = s.restoredStates
            fresh.restoreRates = s.restoreRates
            fresh.allRestored = s.allRestored
            fresh.rebalances = s.rebalances
            fresh.isReady = s.isReady
            fresh.foldedPartitions = s.foldedPartitions
            s = fresh
        }
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    func recordIn(topic: String, count: Int) {
        production?.recordIn(topic: topic, count: count)
        guard topic == Topics.deliveryInbox else { return }
        let now = ContinuousClock.now
        let first = state.withLock { s in
            s.folded += count
            if s.allFolded == nil, s.folded >= s.expected { s.allFolded = now }
            guard s.started == nil else { return false }
            s.started = now
            s.firstBatch = count
            return true
        }
        if first {
            let cpu = processCPUSeconds()
            state.withLock { $0.startCPU = cpu }
        }
    }

    func recordOut(topic: String, count: Int) {
        production?.recordOut(topic: topic, count: count)
        state.withLock { $0.out[topic, default: 0] += count }
    }

    func commitLatency(_ seconds: Double, guarantee: DeliveryGuarantee) {
        production?.commitLatency(seconds, guarantee: guarantee)
        state.withLock { $0.commitSeconds.append(seconds) }
    }

    func commit(result: RuntimeEvents.CommitResult) {
        production?.commit(result: result)
        let now = ContinuousClock.now
        let finished = state.withLock { s in
            guard result == .committed else { s.aborted += 1; return false }
            s.commits += 1
            guard s.finished == nil, s.folded >= s.expected else { return false }
            s.finished = now
            return true
        }
        if finished {
            let cpu = processCPUSeconds()
            state.withLock { $0.finishCPU = cpu }
        }
    }

    func restoredStates(count: Int) {
        production?.restoredStates(count: count)
        let now = ContinuousClock.now
        state.withLock { s in
            s.restoredPartitions += 1
            s.restoredStates += count
            if s.restoredPartitions == restoringPartitions { s.allRestored = now }
        }
    }

    func restoreRate(statesPerSecond: Double) {
        production?.restoreRate(statesPerSecond: statesPerSecond)
        state.withLock { $0.restoreRates.append(statesPerSecond) }
    }

    func rebalance(kind: RuntimeEvents.RebalanceKind) {
        production?.rebalance(kind: kind)
        state.withLock { $0.rebalances.append(kind.rawValue) }
    }

    func setLag(topic: String, partition: Int, lag: Int64) { production?.setLag(topic: topic, partition: partition, lag: lag) }
    func clearLag(topic: String, partition: Int) { production?.clearLag(topic: topic, partition: partition) }
    func restoring(partitions: Int) { production?.restoring(partitions: partitions) }

    func ready(_ isReady: Bool) {
        production?.ready(isReady)
        state.withLock { $0.isReady = isReady }
    }

    func foldedPartitions(_ count: Int) {
        production?.foldedPartitions(count)
        state.withLock { $0.foldedPartitions = count }
    }

    func securityDeliveryLatency(seconds: Double) {
        production?.securityDeliveryLatency(seconds: seconds)
        state.withLock { $0.securityFoldSeconds.append(seconds) }
    }

    func decision(outcome: DecisionOutcome, reason: String?, rule: String, count: Int) {
        production?.decision(outcome: outcome, reason: reason, rule: rule, count: count)
    }
    func delivery(category: String, channel: DeliveryChannel, count: Int) {
        production?.delivery(category: category, channel: channel, count: count)
    }
    func deadLetter(topic: String) { production?.deadLetter(topic: topic) }
    func tickWritten() { production?.tickWritten() }
    func timerLateness(seconds: Double) { production?.timerLateness(seconds: seconds) }
    func partitionCountMismatch(topic: String, active: Bool) { production?.partitionCountMismatch(topic: topic, active: active) }
    func unitFailures(consecutive: Int) { production?.unitFailures(consecutive: consecutive) }
    func failingInput(topic: String, partition: Int, offset: Int64) { production?.failingInput(topic: topic, partition: partition, offset: offset) }
    func failingInputCleared() { production?.failingInputCleared() }
    func inputQuarantined(topic: String) { production?.inputQuarantined(topic: topic) }
}

/// The process's resident bytes (`/proc/self/statm`; 0 where there is none): the growth over
/// a restore is what the restored fold keeps, an upper bound (the allocator keeps freed pages).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
