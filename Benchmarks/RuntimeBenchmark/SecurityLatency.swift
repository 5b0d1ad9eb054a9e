import DeliveryPolicy
import FleetModel
import FleetService
import FleetWorkers
import Foundation
import Logging

/// End-to-end latency of a security intent under load (issue 19), `LATENCY=1`: the delivery
/// worker runs with its default settings (commit interval, batches, ticks); once it is ready
/// and has committed a warm-up (`WARMUP` records) and idled for `settle`, a burst of `N` inbox
/// records is produced live at `RATE` records/s (`PacedProducer`), `SECURITY` of them
/// access-request intents spread evenly (`LatencyWorkload`), while a reader in this process
/// (`SecurityDeliveryReader`, read_committed) notes when each one's delivery becomes readable.
/// The latency is that instant minus the instant the intent was handed to the producer: produce
/// batching, broker, the worker's fetch, fold and commit, and the reader's fetch.
///
/// Every security intent must be delivered; a missing one fails the run, named.
enum SecurityLatency {
    /// How long to wait for what is still outstanding once every record is produced.
    static let drain = Duration.seconds(60)
    /// How long the worker idles between the warm-up's commit and the burst.
    static let settle = Duration.seconds(1)

    static func run(options: BenchmarkOptions, namespace: TopicNamespace, logger: Logger) async throws {
        let mode = options.guarantee.rawValue
        let loadBefore = loadAverage()
        note("generating \(options.warmUp) warm-up and \(options.records) burst records, \(options.securityIntents) of them security intents")
        let workload = LatencyWorkload(warmUp: options.warmUp, count: options.records, security: options.securityIntents)

        let environment = [
            "FLEET_BOOTSTRAP_SERVERS": options.brokers,
            "FLEET_TOPIC_PREFIX": namespace.prefix,
            "FLEET_GROUP_ID": namespace.prefix + "delivery",
            "FLEET_GUARANTEE": mode,
            "FLEET_HTTP_PORT": "0",
        ].merging(options.runtimeOverrides) { _, override in override }
        let settings = try WorkerSettings(worker: .delivery, environment: environment)
        let profile = try PolicyProfile.shipped("rin")
        let producer = try PacedProducer(rate: options.rate, brokers: options.brokers)
        let reader = try await SecurityDeliveryReader(
            expected: Set(workload.security.values), ignoring: workload.warmUpSecurity, brokers: options.brokers, namespace: namespace, partitions: options.partitions)
        let reading = Task { try await reader.read() }
        let observer = ThroughputObserver(expected: options.warmUp, restoringPartitions: Int(options.partitions), production: options.makeProductionMetrics())
        let worker = RunningWorker(settings: settings, profile: profile, observer: observer, logger: logger)

        let produced: PacedProducer.Result
        do {
            produced = try await produceBurst(
                workload, with: producer, observed: observer, reader: reader, options: options, namespace: namespace)
            reading.cancel()
            try await reading.value
            try await worker.stop()
        } catch {
            reading.cancel()
            try? await worker.stop()
            await reader.close()
            await producer.close()
            throw error
        }
        await reader.close()
        await producer.close()

        let report = Report(workload: workload, produced: produced, read: reader.result, worker: observer.snapshot)
        for line in report.lines(options: options, loadBefore: loadBefore, loadAfter: loadAverage()) { print(line) }
        try report.check()
    }

    /// Waits for the worker to be ready, warms it up, lets it idle for `settle`, produces the
    /// burst and waits (at most `drain`) for every security delivery and the worker's commit of
    /// the whole burst.
    private static func produceBurst(
        _ workload: LatencyWorkload, with producer: PacedProducer, observed observer: ThroughputObserver,
        reader: SecurityDeliveryReader, options: BenchmarkOptions, namespace: TopicNamespace
    ) async throws -> PacedProducer.Result {
        let partitions = Int(options.partitions)
        guard await waitUntil(.seconds(120), { let s = observer.snapshot; return s.isReady && s.foldedPartitions == partitions }) else {
            throw BenchmarkOptions.Invalid(description: "the worker was not ready with \(partitions) partitions within 120 s")
        }
        try await producer.prepare(for: workload.records[...], namespace: namespace)
        if workload.burstStart > 0 {
            note("warming up with \(workload.burstStart) records")
            _ = try await producer.produce(workload.records[..<workload.burstStart], marking: [], namespace: namespace)
            guard await waitUntil(drain, { observer.snapshot.finished != nil }) else {
                throw BenchmarkOptions.Invalid(description: "the worker did not commit the warm-up within \(drain)")
            }
            try await Task.sleep(for: settle)
        }
        observer.restart(expecting: options.records)
        note("producing \(options.records) records at \(Int(options.rate))/s, \(options.guarantee.rawValue)")
        let produced = try await producer.produce(workload.burst, marking: Set(workload.security.keys), namespace: namespace)
        _ = await waitUntil(drain) { reader.received == workload.security.count }
        _ = await waitUntil(drain) { observer.snapshot.finished != nil }
        return produced
    }

    /// Polls `condition` every 10 ms for at most `timeout`; whether it came true.
    private static func waitUntil(_ timeout: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// `/proc/loadavg`'s 1-minute figure ("?" where there is none): others build on this
    /// machine, so each result says how loaded it was.
    private static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").first.map(String.init) ?? "?"
    }
}
