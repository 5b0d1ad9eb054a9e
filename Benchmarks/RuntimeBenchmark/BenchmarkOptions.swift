import FleetService
import FleetWorkers
import Foundation
import Prometheus

/// What one run measures, from the environment (like `limit.sh`, so the script passes the same
/// variables to both): `BROKERS`, `N`, `PARTITIONS`, `MODE`; `LATENCY=1` selects the
/// security-latency mode (`SecurityLatency`) with `RATE` and `SECURITY`.
struct BenchmarkOptions {
    /// The broker's bootstrap address.
    var brokers: String
    /// Records pre-filled into the delivery inbox and folded.
    var records: Int
    var partitions: Int32
    var guarantee: DeliveryGuarantee
    /// `DIGEST=1`: after the fold, fingerprint its outputs and history (`OutputDigest`).
    var digest: Bool
    /// `RESTORE=0`: stop after the fold (for experiments that break the changelog).
    var restore: Bool
    /// `RESTORE_USERS=1000000`: users of the one-partition restore (`SinglePartitionRestore`);
    /// 0 skips it.
    var restoreUsers: Int
    /// `FLEET_*` and `KAFKA_*` variables of this process, passed to the runtime on top of the
    /// benchmark's defaults (e.g. `FLEET_BATCH_MAX_RECORDS=2000` to try another batch size).
    var runtimeOverrides: [String: String]
    /// `LATENCY=1`: instead of the fold and restore runs, the security-latency mode: `N` records
    /// produced live at `RATE`/s while the worker runs, `SECURITY` of them access requests.
    var latency: Bool
    /// `RATE=12000`: records/s the latency mode produces.
    var rate: Double
    /// `SECURITY=50`: security intents among the latency mode's `N` records.
    var securityIntents: Int
    /// `WARMUP=2000`: records the latency mode produces (at `RATE`, none of them security
    /// intents) and lets the worker commit before the measured burst; 0 measures a cold worker.
    var warmUp: Int
    /// `METRICS=prometheus` (the default): the runtime also reports to a `WorkerMetrics` over a
    /// Prometheus registry, as a deployed worker does; `METRICS=none` measures without it.
    var productionMetrics: Bool

    /// A deployed delivery worker's metrics, when `productionMetrics`: a fresh registry each time.
    func makeProductionMetrics() -> (any RuntimeObserver)? {
        productionMetrics ? WorkerMetrics(worker: "delivery-worker", registry: PrometheusCollectorRegistry()) : nil
    }

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    static let usage = """
        usage: BROKERS=host:port [N=200000] [PARTITIONS=4] [MODE=at_least_once|exactly_once] [DIGEST=1] [RESTORE=0] [RESTORE_USERS=1000000] [METRICS=prometheus|none] RuntimeBenchmark
               BROKERS=host:port LATENCY=1 [N=20000] [RATE=12000] [SECURITY=50] [WARMUP=2000] [PARTITIONS=4] [MODE=…] RuntimeBenchmark
        Any FLEET_* or KAFKA_* variable is passed to the runtime (defaults: the worker's, with ticks off outside LATENCY mode).
        """

    init(environment: [String: String]) throws(Invalid) {
        guard let brokers = environment["BROKERS"] ?? environment["FLEET_KAFKA_BOOTSTRAP"], !brokers.isEmpty else {
            throw Invalid(description: "BROKERS is not set\n\(Self.usage)")
        }
        self.brokers = brokers
        self.latency = environment["LATENCY"] == "1"
        guard let records = Int(environment["N"] ?? (latency ? "20000" : "200000")), records > 0 else {
            throw Invalid(description: "N must be a positive integer\n\(Self.usage)")
        }
        self.records = records
        guard let partitions = Int32(environment["PARTITIONS"] ?? "4"), partitions > 0 else {
            throw Invalid(description: "PARTITIONS must be a positive integer\n\(Self.usage)")
        }
        self.partitions = partitions
        guard let guarantee = DeliveryGuarantee(rawValue: environment["MODE"] ?? "at_least_once") else {
            throw Invalid(description: "MODE must be at_least_once or exactly_once\n\(Self.usage)")
        }
        self.guarantee = guarantee
        self.digest = environment["DIGEST"] == "1"
        self.restore = environment["RESTORE"] != "0"
        guard let restoreUsers = Int(environment["RESTORE_USERS"] ?? "1000000"), restoreUsers >= 0 else {
            throw Invalid(description: "RESTORE_USERS must be a whole number\n\(Self.usage)")
        }
        self.restoreUsers = restoreUsers
        self.runtimeOverrides = environment.filter { $0.key.hasPrefix("FLEET_") || $0.key.hasPrefix("KAFKA_") }
        runtimeOverrides["FLEET_KAFKA_BOOTSTRAP"] = nil
        guard let rate = Double(environment["RATE"] ?? "12000"), rate > 0, rate.isFinite else {
            throw Invalid(description: "RATE must be a positive number of records per second\n\(Self.usage)")
        }
        self.rate = rate
        guard let security = Int(environment["SECURITY"] ?? "50"), security >= 0, security <= records else {
            throw Invalid(description: "SECURITY must be a whole number no larger than N\n\(Self.usage)")
        }
        self.securityIntents = security
        guard let warmUp = Int(environment["WARMUP"] ?? "2000"), warmUp >= 0 else {
            throw Invalid(description: "WARMUP must be a whole number\n\(Self.usage)")
        }
        self.warmUp = warmUp
        switch environment["METRICS"] ?? "prometheus" {
        case "prometheus": productionMetrics = true
        case "none": productionMetrics = false
        default: throw Invalid(description: "METRICS must be prometheus or none\n\(Self.usage)")
        }
    }
}
