/// Every metric a worker exports on `/metrics`, in one place: the runtime records them, the
/// Grafana dashboard and the Prometheus alert rules in `deploy/` query them, and a test checks
/// that `deploy/` names no metric missing here.
///
/// Every metric carries the label `worker` (the executable's name); the labels listed per
/// metric come on top. Durations are seconds (Prometheus convention).
public enum MetricNames {
    /// Counter. Records read, by `topic` (logical name).
    public static let recordsIn = "fleet_records_in_total"
    /// Counter. Records written, by `topic` (outputs, forwards, ticks, state, history, DLQ).
    public static let recordsOut = "fleet_records_out_total"
    /// Gauge. High watermark (asked of the partition leader every second) minus the offset this
    /// member committed or restored at, by `topic` and `partition`.
    public static let consumerLag = "fleet_consumer_lag"
    /// Histogram (seconds). Time to commit one unit, by `guarantee`: the transaction commit
    /// under exactly-once, acknowledgements plus offset commit under at-least-once.
    public static let commitLatency = "fleet_commit_latency_seconds"
    /// Counter. Commit units, by `result` (`committed`, `aborted`).
    public static let commits = "fleet_commits_total"
    /// Gauge. Assigned partitions whose state is still being restored.
    public static let restoringPartitions = "fleet_restoring_partitions"
    /// Gauge. Partitions of the folded log assigned to this member (restoring or folding): its
    /// share of the users. Members of one worker should differ by at most one.
    public static let foldedPartitions = "fleet_folded_partitions"
    /// Counter. User states read back from `<worker>.state` while restoring.
    public static let restoredStates = "fleet_restored_states_total"
    /// Gauge. User states per second of the last finished partition restore.
    public static let restoreRate = "fleet_restore_states_per_second"
    /// Gauge. 1 when every assigned partition is restored (what `/readyz` answers), else 0.
    public static let ready = "fleet_ready"
    /// Counter. Decisions written by the delivery worker, by `outcome`, `reason` and `rule`.
    public static let decisions = "fleet_decisions_total"
    /// Counter. Deliveries written by the delivery worker, by `category` and `channel`.
    public static let deliveries = "fleet_deliveries_total"
    /// Histogram (seconds). Wall time from a SECURITY intent's arrival in the inbox (its record
    /// timestamp) to the moment its delivery is handed to the producer.
    public static let securityDeliveryLatency = "fleet_security_delivery_latency_seconds"
    /// Counter. Records sent to a dead-letter topic, by `topic` (the source topic).
    public static let deadLetters = "fleet_dead_letters_total"
    /// Counter. Rebalance events, by `kind` (`assigned`, `revoked`, `lost`).
    public static let rebalances = "fleet_rebalances_total"
    /// Counter. `tick` records written to idle inbox partitions.
    public static let ticksWritten = "fleet_ticks_written_total"
    /// Histogram (seconds). How far past its due time a timer fired, in log time.
    public static let timerLateness = "fleet_timer_lateness_seconds"
    /// Gauge. 1 while a topic is not processed because its partition count changed, by `topic`.
    public static let partitionCountMismatch = "fleet_partition_count_mismatch"

    /// Gauge. Commit units that failed in a row since the last successful commit (0 while
    /// the worker makes progress). `/readyz` fails from 3, `/healthz` from `FLEET_STALL_UNITS`.
    public static let unitFailures = "fleet_unit_failures_consecutive"
    /// Gauge. The offset of the input whose record the broker refused in the latest failed
    /// unit, by `topic` and `partition`; -1 once units commit again.
    public static let failingInput = "fleet_failing_input_offset"
    /// Counter. Inputs dead-lettered after their records failed to produce
    /// `FLEET_POISON_ATTEMPTS` times (quarantined), by `topic`.
    public static let quarantinedInputs = "fleet_quarantined_inputs_total"
    /// Counter. Times a partition's fetching was paused because its lane held
    /// `FLEET_LANE_BUFFER_BYTES` of records not yet folded, by `topic` (the folded log). Each
    /// pause drops the partition's prefetched records, which are fetched again on resume.
    public static let lanePauses = "fleet_lane_pauses_total"

    public static let all: [String] = [
        recordsIn, recordsOut, consumerLag, commitLatency, commits, restoringPartitions, foldedPartitions, restoredStates, restoreRate,
        ready, decisions, deliveries, securityDeliveryLatency, deadLetters, rebalances, ticksWritten, timerLateness,
        partitionCountMismatch, unitFailures, failingInput, quarantinedInputs, lanePauses,
    ]
}
