import DeliveryPolicy
import FleetModel
import FleetService
import FleetWorkers
import Foundation
import Kafka
import Logging
import ServiceLifecycle

// End-to-end throughput of the delivery worker on the stateful runtime against a real broker,
// and the restore rate of its state (issue #5). Not a timed test: a measurement printed as
// RESULT lines, compared by scripts/bench-runtime with ../shared/bench/limit.sh run on the same
// broker in the same run.
//
//   BROKERS=127.0.0.1:9092 N=200000 PARTITIONS=4 MODE=at_least_once .build/release/RuntimeBenchmark
//
// LATENCY=1 measures a security intent's produce → delivery latency under load instead
// (`SecurityLatency`, issue 19):
//
//   BROKERS=127.0.0.1:9092 LATENCY=1 N=20000 RATE=12000 SECURITY=50 MODE=exactly_once .build/release/RuntimeBenchmark

let options: BenchmarkOptions
do {
    options = try BenchmarkOptions(environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = Logger.Level(rawValue: ProcessInfo.processInfo.environment["FLEET_LOG_LEVEL"] ?? "") ?? .warning
    return handler
}
let logger = Logger(label: "runtime-benchmark")

func note(_ text: String) {
    FileHandle.standardError.write(Data("runtime-benchmark: \(text)\n".utf8))
}

let namespace = TopicNamespace(prefix: "bench-\(UUID().uuidString.prefix(8).lowercased()).")
let admin = try KafkaAdmin(configuration: KafkaConfiguration(bootstrapServers: options.brokers), logger: logger)
try await TopicAdministration.create(admin: admin, partitions: options.partitions, namespace: namespace)
/// The whole measurement in a namespace of its own; the caller deletes its topics afterwards.
func measure() async throws {
    if options.latency {
        try await SecurityLatency.run(options: options, namespace: namespace, logger: logger)
        return
    }

    // MARK: Pre-fill

    note("generating \(options.records) inbox records")
    let inbox = InboxFill.records(count: options.records)
    let inboxBytes = inbox.reduce(0) { $0 + ($1.value?.count ?? 0) + ($1.key?.count ?? 0) }
    let fillStart = ContinuousClock.now
    try await InboxFill.produce(inbox, brokers: options.brokers, namespace: namespace)
    let fillSeconds = (ContinuousClock.now - fillStart).seconds
    print(String(format: "RESULT prefill records=%d bytes_per_record=%.0f secs=%.3f records_per_s=%.0f",
                 inbox.count, Double(inboxBytes) / Double(inbox.count), fillSeconds, Double(inbox.count) / fillSeconds))

    // MARK: Runtime

    let profile = try PolicyProfile.shipped("rin")
    let environment = [
        "FLEET_BOOTSTRAP_SERVERS": options.brokers,
        "FLEET_TOPIC_PREFIX": namespace.prefix,
        "FLEET_GROUP_ID": namespace.prefix + "delivery",
        "FLEET_GUARANTEE": options.guarantee.rawValue,
        "FLEET_TICK_INTERVAL_MS": "0",
        "FLEET_HTTP_PORT": "0",
        // The group timeouts of limit.sh's consumers.
        "KAFKA_SESSION_TIMEOUT_MS": "6000",
        "KAFKA_HEARTBEAT_INTERVAL_MS": "1000",
    ].merging(options.runtimeOverrides) { _, override in override }
    let settings = try WorkerSettings(worker: .delivery, environment: environment)

    /// Runs one runtime until `done` says so, then shuts it down gracefully (last unit committed,
    /// group left), as SIGTERM would. Fails when `progress` stops moving for `stall`.
    func runRuntime(
        observer: ThroughputObserver, stall: Duration = .seconds(60),
        progress: @escaping @Sendable (ThroughputObserver.Snapshot) -> Int,
        done: @escaping @Sendable (ThroughputObserver.Snapshot) -> Bool
    ) async throws {
        let runtime = WorkerRuntime(
            settings: settings, processor: DeliveryEngine(profile: profile), observer: observer, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: runtime)], logger: logger))
        let task = Task { try await group.run() }
        var last = (value: -1, at: ContinuousClock.now)
        while true {
            let snapshot = observer.snapshot
            if done(snapshot) { break }
            let value = progress(snapshot)
            if value != last.value {
                last = (value, .now)
            } else if ContinuousClock.now - last.at > stall {
                await group.triggerGracefulShutdown()
                _ = try? await task.value
                throw BenchmarkOptions.Invalid(description: "no progress for \(stall) (at \(value))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await group.triggerGracefulShutdown()
        try await task.value
    }

    // MARK: Throughput

    note("folding \(options.records) records over \(options.partitions) partitions, \(options.guarantee.rawValue)")
    let fold = ThroughputObserver(expected: options.records, restoringPartitions: Int(options.partitions), production: options.makeProductionMetrics())
    try await runRuntime(observer: fold, progress: { $0.folded }, done: { $0.finished != nil })
    let folded = fold.snapshot
    guard let started = folded.started, let finished = folded.finished else { fatalError("unreachable: the run ended unfinished") }
    let foldSeconds = (finished - started).seconds
    // The clock started after the first batch was folded: it measures the rest.
    let timed = folded.folded - folded.firstBatch
    let produced = folded.out.values.reduce(0, +)
    let latencies = folded.commitSeconds.sorted()
    func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
    print(String(
        format: "RESULT fleet_%@ records=%d partitions=%d secs=%.3f records_per_s=%.0f out_per_record=%.2f commits=%d aborted=%d commit_ms_p50=%.1f commit_ms_max=%.1f client_cpu=%.0f%%",
        options.guarantee.rawValue, folded.folded, options.partitions, foldSeconds, Double(timed) / foldSeconds,
        Double(produced) / Double(max(1, folded.folded)), folded.commits, folded.aborted,
        percentile(latencies, 0.5) * 1000, (latencies.last ?? 0) * 1000,
        100 * (folded.finishCPU - folded.startCPU) / foldSeconds))
    // How long the commit cadence kept the clock running after the last record was folded: the
    // part of `secs` that is not folding (the C pass-through commits right after its last copy).
    if let allFolded = folded.allFolded {
        print(String(format: "RESULT tail_%@ fold_secs=%.3f commit_tail_ms=%.1f", options.guarantee.rawValue,
                     (allFolded - started).seconds, (finished - allFolded).seconds * 1000))
    }
    print("outputs: " + folded.out.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    // Issue #13: CPU and bytes per input (FLEET_STATE_IMAGES=json gives the build before
    // binary images' figures in the same run).
    let cpuSeconds = folded.finishCPU - folded.startCPU
    print(String(format: "RESULT cpu_%@ state_images=%@ metrics=%@ cpu_secs=%.3f timed_inputs=%d cpu_secs_per_1000_inputs=%.4f",
                 options.guarantee.rawValue, settings.stateImages.rawValue, options.productionMetrics ? "prometheus" : "none", cpuSeconds, timed, 1000 * cpuSeconds / Double(max(1, timed))))
    var stateHistoryBytes = 0
    var allBytes = 0
    for (topic, count) in folded.out.sorted(by: { $0.key < $1.key }) {
        let bytes = try await TopicBytes.read(topic: topic, count: count, brokers: options.brokers, namespace: namespace, partitions: options.partitions)
        allBytes += bytes.bytes
        if topic == Worker.delivery.stateTopic || topic == Worker.delivery.historyTopic { stateHistoryBytes += bytes.bytes }
        print(String(format: "RESULT bytes_%@ state_images=%@ topic=%@ records=%d records_per_input=%.3f bytes_per_input=%.1f",
                     options.guarantee.rawValue, settings.stateImages.rawValue, topic, bytes.records,
                     Double(bytes.records) / Double(folded.folded), Double(bytes.bytes) / Double(folded.folded)))
    }
    print(String(format: "RESULT bytes_total_%@ state_images=%@ state_history_bytes_per_input=%.1f all_bytes_per_input=%.1f",
                 options.guarantee.rawValue, settings.stateImages.rawValue,
                 Double(stateHistoryBytes) / Double(folded.folded), Double(allBytes) / Double(folded.folded)))
    if options.digest {
        for line in try await OutputDigest.lines(
            expected: folded.out, brokers: options.brokers, namespace: namespace, partitions: options.partitions) {
            print(line)
        }
    }

    // MARK: Restore of one large partition (issue #13)

    if options.restoreUsers > 0 {
        let pool = try SinglePartitionRestore.statePool(inbox)
        let variants = (ProcessInfo.processInfo.environment["RESTORE_IMAGES"] ?? "json binary-eager binary")
            .split(separator: " ").compactMap { SinglePartitionRestore.Variant(rawValue: String($0)) }
        // RESTORE_SIZING="sized unsized" also restores with `StateRestorer.Sizing` off, in the same run.
        let sizings = (ProcessInfo.processInfo.environment["RESTORE_SIZING"] ?? "sized").split(separator: " ").map { $0 != "unsized" }
        for variant in variants {
            for sized in sizings {
                note("restoring \(options.restoreUsers) users from one partition, \(variant.rawValue) images (\(pool.count) distinct states)\(sized ? "" : ", tables not sized")")
                let result = try await SinglePartitionRestore.run(
                    users: options.restoreUsers, variant: variant, sized: sized, pool: pool, engine: DeliveryEngine(profile: profile),
                    brokers: options.brokers, namespace: namespace, admin: admin, logger: logger)
                result.printed()
            }
        }
    }

    // MARK: Restore

    guard options.restore else { return }

    let stateTopic = namespace.physical(Worker.delivery.stateTopic)
    let probe = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
        "bootstrap.servers": options.brokers, "group.id": namespace.prefix + "probe",
    ]), logger: logger)
    var changelog = 0
    for partition in 0..<options.partitions {
        changelog += Int(try await probe.queryWatermarks(TopicPartition(stateTopic, partition)).high)
    }
    await probe.close()

    note("restoring \(options.partitions) partitions from \(changelog) changelog records")
    let restore = ThroughputObserver(expected: .max, restoringPartitions: Int(options.partitions), production: options.makeProductionMetrics())
    let restoreStart = ContinuousClock.now
    try await runRuntime(observer: restore, progress: { $0.restoredPartitions }, done: { $0.allRestored != nil })
    let restored = restore.snapshot
    guard let allRestored = restored.allRestored else { fatalError("unreachable: the restore ended unfinished") }
    let rates = restored.restoreRates.sorted()
    // The partitions of one restore share its duration (rate = states / duration each), so the
    // rates add up to the restore's states/s.
    let statesPerSecond = rates.reduce(0, +)
    let restoreSeconds = statesPerSecond > 0 ? Double(restored.restoredStates) / statesPerSecond : 0
    print(String(
        format: "RESULT restore partitions=%d states=%d changelog_records=%d restore_secs=%.3f states_per_s=%.0f per_partition_states_per_s_min=%.0f median=%.0f max=%.0f wall_to_active_secs=%.3f",
        options.partitions, restored.restoredStates, changelog, restoreSeconds,
        statesPerSecond,
        rates.first ?? 0, percentile(rates, 0.5), rates.last ?? 0, (allRestored - restoreStart).seconds))
}

var failure: (any Error)?
do {
    try await measure()
} catch {
    failure = error
}
// Tansu keeps every record in memory: leave nothing behind.
try? await admin.deleteTopics(TopicSpec.all.map { namespace.physical($0.name) })
if let failure {
    note("failed: \(failure)")
    exit(1)
}
