import Benchmark
import FleetModel
import RecordCodecWorkload

/// Records per second of `RecordCodec.decode` and `RecordCodec.encode` over a realistic mix
/// (see `RecordMix`): every worker decodes every record it reads and encodes every one it writes.
let benchmarks: @Sendable () -> Void = {
    let mix = RecordMix.make(count: 20_000)
    let records = mix.decoded()
    let recordsPerSecond = BenchmarkMetric.custom("records/s", polarity: .prefersLarger, useScalingFactor: false)

    func seconds(_ elapsed: Duration) -> Double {
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    Benchmark(
        "RecordCodec.decode mixed records",
        configuration: .init(metrics: [.wallClock, .mallocCountTotal, recordsPerSecond], scalingFactor: .one,
                             maxDuration: .seconds(10), maxIterations: 20)
    ) { benchmark in
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let decoded = mix.decodeAll()
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        precondition(decoded == mix.records.count)
        benchmark.measurement(recordsPerSecond, Int(Double(decoded) / seconds(elapsed)))
    }

    Benchmark(
        "RecordCodec.encode mixed records",
        configuration: .init(metrics: [.wallClock, .mallocCountTotal, recordsPerSecond], scalingFactor: .one,
                             maxDuration: .seconds(10), maxIterations: 20)
    ) { benchmark in
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        var bytes = 0
        for record in records { bytes += RecordCodec.encode(record).count }
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        blackHole(bytes)
        benchmark.measurement(recordsPerSecond, Int(Double(records.count) / seconds(elapsed)))
    }
}
