public import FleetWorkers
public import CoreMetrics
import Synchronization
public import FleetModel

/// The one place that creates the metrics named in `MetricNames`, with the labels documented
/// there, and the typed calls the runtime records them with.
///
/// Handles are created through the factory given at init rather than the global
/// `MetricsSystem`, so every test (and every worker in one process) can own its registry; an
/// executable may still bootstrap the global system for libraries that use it. Handles for a
/// label set are made once and cached, so a call on the hot path is a dictionary look-up under a
/// lock plus an atomic add. Label sets are small and bounded (topics, partitions, policy rules
/// and reasons), which keeps that cache and Prometheus' series count bounded too.
public final class WorkerMetrics: Sendable {
    /// How a commit unit ended (`fleet_commits_total{result}`).
    public typealias CommitResult = RuntimeEvents.CommitResult

    /// A consumer-group rebalance event (`fleet_rebalances_total{kind}`).
    public typealias RebalanceKind = RuntimeEvents.RebalanceKind

    /// The `worker` label every metric carries (the executable's name).
    public let worker: String

    private struct TopicPartition: Hashable, Sendable {
        var topic: String
        var partition: Int
    }

    private struct DecisionLabels: Hashable, Sendable {
        var outcome: DecisionOutcome
        var reason: String
        var rule: String
    }

    private struct DeliveryLabels: Hashable, Sendable {
        var category: String
        var channel: DeliveryChannel
    }

    private let recordsIn: HandleCache<String, Counter>
    private let recordsOut: HandleCache<String, Counter>
    private let consumerLag: HandleCache<TopicPartition, Gauge>
    private let commitLatencies: [DeliveryGuarantee: Timer]
    private let commits: [CommitResult: Counter]
    private let restoringPartitions: Gauge
    private let foldedPartitions: Gauge
    private let restoredStates: Counter
    private let restoreRate: Gauge
    private let ready: Gauge
    private let decisions: HandleCache<DecisionLabels, Counter>
    private let deliveries: HandleCache<DeliveryLabels, Counter>
    private let securityDeliveryLatency: Timer
    private let deadLetters: HandleCache<String, Counter>
    private let rebalances: [RebalanceKind: Counter]
    private let ticksWritten: Counter
    private let timerLateness: Timer
    private let partitionCountMismatches: HandleCache<String, Gauge>
    private let unitFailures: Gauge
    private let failingInputs: HandleCache<TopicPartition, Gauge>
    /// The partitions whose `failingInput` gauge was set, to reset them to -1.
    private let failingSet = Mutex<Set<TopicPartition>>([])
    private let quarantinedInputs: HandleCache<String, Counter>
    private let lanePauses: HandleCache<String, Counter>

    /// - Parameters:
    ///   - worker: The `worker` label value, e.g. `delivery-worker`.
    ///   - factory: Where handles come from. For Prometheus use `init(worker:registry:)`, which
    ///     configures the histogram buckets; a plain `PrometheusMetricsFactory` would give the
    ///     seconds histograms its default buckets.
    public init(worker: String, factory: any MetricsFactory) {
        self.worker = worker
        @Sendable func labels(_ more: [(String, String)] = []) -> [(String, String)] { [("worker", worker)] + more }
        func counter(_ name: String, _ more: [(String, String)] = []) -> Counter {
            Counter(label: name, dimensions: labels(more), factory: factory)
        }
        func gauge(_ name: String, _ more: [(String, String)] = []) -> Gauge {
            Gauge(label: name, dimensions: labels(more), factory: factory)
        }
        func timer(_ name: String, _ more: [(String, String)] = []) -> Timer {
            Timer(label: name, dimensions: labels(more), factory: factory)
        }

        recordsIn = HandleCache { Counter(label: MetricNames.recordsIn, dimensions: labels([("topic", $0)]), factory: factory) }
        recordsOut = HandleCache { Counter(label: MetricNames.recordsOut, dimensions: labels([("topic", $0)]), factory: factory) }
        consumerLag = HandleCache {
            Gauge(
                label: MetricNames.consumerLag, dimensions: labels([("topic", $0.topic), ("partition", String($0.partition))]),
                factory: factory)
        }
        // Closed label sets are created up front: every series exists (at 0) from the start,
        // so `rate()` and alerts see the first event, and recording needs no lock.
        commitLatencies = Dictionary(uniqueKeysWithValues: DeliveryGuarantee.allCases.map {
            ($0, timer(MetricNames.commitLatency, [("guarantee", $0.rawValue)]))
        })
        commits = Dictionary(uniqueKeysWithValues: CommitResult.allCases.map {
            ($0, counter(MetricNames.commits, [("result", $0.rawValue)]))
        })
        restoringPartitions = gauge(MetricNames.restoringPartitions)
        foldedPartitions = gauge(MetricNames.foldedPartitions)
        restoredStates = counter(MetricNames.restoredStates)
        restoreRate = gauge(MetricNames.restoreRate)
        ready = gauge(MetricNames.ready)
        decisions = HandleCache {
            Counter(
                label: MetricNames.decisions,
                dimensions: labels([("outcome", $0.outcome.rawValue), ("reason", $0.reason), ("rule", $0.rule)]),
                factory: factory)
        }
        deliveries = HandleCache {
            Counter(
                label: MetricNames.deliveries,
                dimensions: labels([("category", $0.category), ("channel", $0.channel.rawValue)]), factory: factory)
        }
        securityDeliveryLatency = timer(MetricNames.securityDeliveryLatency)
        deadLetters = HandleCache { Counter(label: MetricNames.deadLetters, dimensions: labels([("topic", $0)]), factory: factory) }
        rebalances = Dictionary(uniqueKeysWithValues: RebalanceKind.allCases.map {
            ($0, counter(MetricNames.rebalances, [("kind", $0.rawValue)]))
        })
        ticksWritten = counter(MetricNames.ticksWritten)
        timerLateness = timer(MetricNames.timerLateness)
        partitionCountMismatches = HandleCache {
            Gauge(label: MetricNames.partitionCountMismatch, dimensions: labels([("topic", $0)]), factory: factory)
        }
        unitFailures = gauge(MetricNames.unitFailures)
        failingInputs = HandleCache {
            Gauge(
                label: MetricNames.failingInput, dimensions: labels([("topic", $0.topic), ("partition", String($0.partition))]),
                factory: factory)
        }
        quarantinedInputs = HandleCache {
            Counter(label: MetricNames.quarantinedInputs, dimensions: labels([("topic", $0)]), factory: factory)
        }
        lanePauses = HandleCache { Counter(label: MetricNames.lanePauses, dimensions: labels([("topic", $0)]), factory: factory) }
        ready.record(0)
        unitFailures.record(0)
    }

    // MARK: Consuming and producing

    /// `count` records read from `topic` (logical name). Counts below 1 are ignored here and
    /// in the other counting calls: a counter only goes up, and a metric must not stop a worker.
    public func recordIn(topic: String, count: Int = 1) {
        guard count > 0 else { return }  // a Prometheus counter traps on a negative increment
        recordsIn[topic].increment(by: count)
    }

    /// `count` records written to `topic` (outputs, forwards, ticks, state, history, DLQ).
    public func recordOut(topic: String, count: Int = 1) {
        guard count > 0 else { return }
        recordsOut[topic].increment(by: count)
    }

    /// High watermark minus committed offset of one assigned partition.
    public func setLag(topic: String, partition: Int, lag: Int64) {
        consumerLag[TopicPartition(topic: topic, partition: partition)].record(lag)
    }

    /// Drops the lag series of a partition this instance no longer owns, so the dashboard does
    /// not show a stale lag for it (its new owner reports it).
    public func clearLag(topic: String, partition: Int) {
        consumerLag.remove(TopicPartition(topic: topic, partition: partition))?.destroy()
    }

    // MARK: Committing

    /// Time to commit one unit under `guarantee`.
    public func commitLatency(_ seconds: Double, guarantee: DeliveryGuarantee) {
        Self.record(seconds, in: commitLatencies[guarantee])
    }

    /// One commit unit ended with `result`.
    public func commit(result: CommitResult) {
        commits[result]?.increment()
    }

    // MARK: Restoring and readiness

    /// Assigned partitions whose state is still being restored.
    public func restoring(partitions: Int) {
        restoringPartitions.record(partitions)
    }

    /// Partitions of the folded log assigned to this member: its share of the users.
    public func foldedPartitions(_ count: Int) {
        foldedPartitions.record(count)
    }

    /// `count` user states read back from the state topic.
    public func restoredStates(count: Int) {
        guard count > 0 else { return }
        restoredStates.increment(by: count)
    }

    /// User states per second of the partition restore that just finished.
    public func restoreRate(statesPerSecond: Double) {
        guard statesPerSecond.isFinite else { return }
        restoreRate.record(statesPerSecond)
    }

    /// Whether every assigned partition is restored (what `/readyz` answers).
    public func ready(_ isReady: Bool) {
        ready.record(isReady ? 1 : 0)
    }

    /// 1 while `topic` is not processed because its partition count changed, 0 once it is again.
    public func partitionCountMismatch(topic: String, active: Bool) {
        partitionCountMismatches[topic].record(active ? 1 : 0)
    }

    // MARK: Failed units

    /// Commit units failed in a row (0 once one commits).
    public func unitFailures(consecutive: Int) {
        unitFailures.record(consecutive)
    }

    /// The input blamed for the latest failed unit (`topic` logical).
    public func failingInput(topic: String, partition: Int, offset: Int64) {
        let key = TopicPartition(topic: topic, partition: partition)
        failingSet.withLock { _ = $0.insert(key) }
        failingInputs[key].record(offset)
    }

    /// Units commit again: every failing-input gauge goes back to -1.
    public func failingInputCleared() {
        let keys = failingSet.withLock { set in
            defer { set.removeAll() }
            return set
        }
        for key in keys { failingInputs[key].record(-1) }
    }

    /// One input dead-lettered after its records failed to produce again and again.
    public func inputQuarantined(topic: String) {
        quarantinedInputs[topic].increment()
    }

    /// One partition's fetching paused because its lane was full.
    public func lanePaused(topic: String) {
        lanePauses[topic].increment()
    }

    /// One consumer-group rebalance event.
    public func rebalance(kind: RebalanceKind) {
        rebalances[kind]?.increment()
    }

    // MARK: Delivery worker

    /// `count` decisions written; a decision without a reason is labelled `reason="none"`.
    public func decision(outcome: DecisionOutcome, reason: String?, rule: String, count: Int = 1) {
        guard count > 0 else { return }
        decisions[DecisionLabels(outcome: outcome, reason: reason ?? "none", rule: rule)].increment(by: count)
    }

    /// `count` deliveries written.
    public func delivery(category: String, channel: DeliveryChannel, count: Int = 1) {
        guard count > 0 else { return }
        deliveries[DeliveryLabels(category: category, channel: channel)].increment(by: count)
    }

    /// Wall time from a SECURITY intent's arrival in the inbox to its delivery's hand-off.
    public func securityDeliveryLatency(seconds: Double) {
        Self.record(seconds, in: securityDeliveryLatency)
    }

    // MARK: Dead letters, ticks, timers

    /// One record from `topic` (the source topic) sent to its dead-letter topic.
    public func deadLetter(topic: String) {
        deadLetters[topic].increment()
    }

    /// One `tick` record written to an idle inbox partition.
    public func tickWritten() {
        ticksWritten.increment()
    }

    /// How far past its due time a timer fired, in log time.
    public func timerLateness(seconds: Double) {
        Self.record(seconds, in: timerLateness)
    }

    /// Records a duration in seconds. NaN and infinities are dropped (converting them to
    /// nanoseconds would trap); a negative duration — clocks of two hosts disagreeing — counts
    /// as 0, so the observation is kept rather than silently lost.
    private static func record(_ seconds: Double, in timer: Timer?) {
        guard let timer, seconds.isFinite else { return }
        timer.recordNanoseconds(Int64(min(max(seconds, 0) * 1e9, 9.2e18)))
    }
}

/// The worker's metrics are what the runtime reports to.
extension WorkerMetrics: RuntimeObserver {}
