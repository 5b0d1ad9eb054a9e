import Benchmark
import DeliveryWorkload

/// Decisions per second of `DeliveryEngine` on one core over a realistic mix, and the bytes of
/// serialised state per user (idle and busy).
///
/// The mix: 20 000 users over three days; most are idle (sign-up, settings, an open or two, the
/// odd intent), 15 % get bursts of score and enrichment intents (coalesced), 5 % get security
/// requests. Records are fed in time order with each user's due timers fired first, as the
/// runtime does per partition.
let benchmarks: @Sendable () -> Void = {
    let workload = Workload.make(users: 20_000)

    Benchmark(
        "DeliveryEngine mixed traffic",
        configuration: .init(
            metrics: [
                .wallClock, .mallocCountTotal, .custom("decisions/s", polarity: .prefersLarger, useScalingFactor: false),
                .custom("records/s", polarity: .prefersLarger, useScalingFactor: false),
                .custom("decisions", polarity: .prefersLarger, useScalingFactor: false),
            ],
            scalingFactor: .one, maxDuration: .seconds(20), maxIterations: 10)
    ) { benchmark in
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let result = workload.run()
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        benchmark.measurement(.custom("decisions/s", polarity: .prefersLarger, useScalingFactor: false), Int(Double(result.decisions) / seconds))
        benchmark.measurement(.custom("records/s", polarity: .prefersLarger, useScalingFactor: false), Int(Double(result.records) / seconds))
        benchmark.measurement(.custom("decisions", polarity: .prefersLarger, useScalingFactor: false), result.decisions)
        blackHole(result)
    }

    Benchmark(
        "DeliveryEngine state bytes",
        configuration: .init(
            metrics: [.custom("idle user bytes (median)"), .custom("idle user bytes (max)"), .custom("busy user bytes (max)")],
            scalingFactor: .one, maxIterations: 1)
    ) { benchmark in
        let result = workload.run(measuringState: true)
        let idle = result.idleBytes.sorted()
        benchmark.measurement(.custom("idle user bytes (median)"), idle.isEmpty ? 0 : idle[idle.count / 2])
        benchmark.measurement(.custom("idle user bytes (max)"), idle.last ?? 0)
        benchmark.measurement(.custom("busy user bytes (max)"), result.busyBytes.max() ?? 0)
    }
}
