import DeliveryWorkload
import Foundation

// Runs the benchmark workload a given number of times (default 1; a second argument sets the
// number of users, default 20 000) without the benchmark harness, for profilers
// (`perf record -g .build/release/DeliveryEngineProfile 3`), and prints the best and median
// decisions/s of the passes, then the serialised state sizes and a digest of every output and
// every state written (outside the timed passes): equal digests before and after a change mean
// it left every byte alone. `--timing-only` skips that pass, so that a callgrind run toggled on
// `Workload.run` counts the timed passes alone.
let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let passes = arguments.first ?? 1
let workload = Workload.make(users: arguments.dropFirst().first ?? 20_000)
let clock = ContinuousClock()
var rates: [Double] = []
var last = Workload.Result()
for _ in 0..<passes {
    let start = clock.now
    last = workload.run()
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    rates.append(Double(last.decisions) / seconds)
}
rates.sort()
if let best = rates.last {
    let median = rates[rates.count / 2]
    print("\(passes) passes of \(last.records) records, \(last.decisions) decisions: decisions/s best \(Int(best)), median \(Int(median))")
}
guard !CommandLine.arguments.contains("--timing-only") else { exit(0) }
let sized = workload.run(measuringState: true, digesting: true)
let idle = sized.idleBytes.sorted()
if !idle.isEmpty {
    print("state bytes: idle median \(idle[idle.count / 2]), idle max \(idle[idle.count - 1]), busy max \(sized.busyBytes.max() ?? 0)")
}
if let digest = sized.digest { print("digest: \(digest)") }
