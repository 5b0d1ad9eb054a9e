import DeliveryWorkload

// Runs the benchmark workload a given number of times (default 1) without the benchmark
// harness, for profilers (`perf record -g .build/release/DeliveryEngineProfile 3`), and prints
// the best and median decisions/s of the passes.
let passes = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 1
let workload = Workload.make(users: 20_000)
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
