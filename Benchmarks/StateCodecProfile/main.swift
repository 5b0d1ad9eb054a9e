import DeliveryPolicy
import DeliveryWorkload
import FleetModel
import Glibc

// States/s of encoding `DeliveryState`s for the changelog, before (`DeliveryState.serialized()`,
// Foundation's `JSONEncoder`) and after (`CanonicalJSONEncoder`), over every state the delivery
// benchmark's workload writes (each user's state after each of its inputs), on one core:
//   swift build -c release --product StateCodecProfile && .build/release/StateCodecProfile 5
// A second argument sets the number of users (default 20 000). Rates are per CPU second.

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let passes = arguments.first ?? 3
let workload = Workload.make(users: arguments.dropFirst().first ?? 20_000)
let states = workload.run(collectingStates: true).changelog

/// Runs `body` and returns the CPU seconds this thread spent in it (a shared machine's other
/// work does not count against the rates).
func cpuSeconds(_ body: () -> Void) -> Double {
    func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
    let start = now()
    body()
    return now() - start
}

func perSecond(_ count: Int, _ seconds: Double) -> Int { Int(Double(count) / seconds) }

var totalBytes = 0
for state in states {
    let reference = state.serialized()
    guard let bytes = try? CanonicalJSONEncoder.encode(state), bytes == reference else {
        fatalError("CanonicalJSONEncoder differs from JSONEncoder for \(String(decoding: reference, as: UTF8.self))")
    }
    totalBytes += bytes.count
}
print("mix: \(states.count) states, \(totalBytes / max(states.count, 1)) bytes each on average, identical bytes both ways")
for pass in 1...passes {
    var before = 0, after = 0
    let beforeTime = cpuSeconds { for state in states { before += state.serialized().count } }
    var buffer: [UInt8] = []
    let afterTime = cpuSeconds {
        for state in states {
            buffer.removeAll(keepingCapacity: true)
            try? CanonicalJSONEncoder.encode(state, appendingTo: &buffer)
            after += buffer.count
        }
    }
    precondition(before == totalBytes && after == totalBytes)
    print("pass \(pass): JSONEncoder \(perSecond(states.count, beforeTime)) states/s, CanonicalJSONEncoder \(perSecond(states.count, afterTime)) states/s")
}
