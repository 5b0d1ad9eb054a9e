import Benchmark
import DeliveryPolicy
import DeliveryWorkload
import FleetModel

/// States per second of encoding `DeliveryState` for the changelog: every state the delivery
/// benchmark's workload writes (each user's state after each input), with Foundation's
/// `JSONEncoder` (`DeliveryState.serialized()`, the old path) and with `CanonicalJSONEncoder`
/// (same bytes).
let benchmarks: @Sendable () -> Void = {
    let states = Workload.make(users: 5_000).run(collectingStates: true).changelog
    let statesPerSecond = BenchmarkMetric.custom("states/s", polarity: .prefersLarger, useScalingFactor: false)

    func seconds(_ elapsed: Duration) -> Double {
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    func measure(_ name: String, _ encode: @escaping @Sendable (DeliveryState) -> Int) {
        Benchmark(
            name,
            configuration: .init(metrics: [.wallClock, .mallocCountTotal, statesPerSecond], scalingFactor: .one,
                                 maxDuration: .seconds(10), maxIterations: 20)
        ) { benchmark in
            let clock = ContinuousClock()
            benchmark.startMeasurement()
            let start = clock.now
            var bytes = 0
            for state in states { bytes += encode(state) }
            let elapsed = clock.now - start
            benchmark.stopMeasurement()
            blackHole(bytes)
            benchmark.measurement(statesPerSecond, Int(Double(states.count) / seconds(elapsed)))
        }
    }

    measure("DeliveryState encode, JSONEncoder") { $0.serialized().count }
    measure("DeliveryState encode, CanonicalJSONEncoder") { (try? CanonicalJSONEncoder.encode($0).count) ?? 0 }
}
