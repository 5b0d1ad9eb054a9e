import FleetModel
import Glibc
import RecordCodecWorkload

// Records/s of `RecordCodec.decode` and `RecordCodec.encode` over the realistic mix, without
// the benchmark harness (for perf/valgrind, and a quick figure):
//   swift build -c release --product RecordCodecProfile && .build/release/RecordCodecProfile 5
// A second argument `decode`, `encode` or `jsonencoder` measures only that side (for profiling
// one of them); `jsonencoder` is the old encode path, Foundation's `JSONEncoder` (same bytes).
// Rates are per second of this thread's CPU time, so other work on a shared machine does not
// count against them.

let passes = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 3 : 3
let only = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : nil
let mix = RecordMix.make(count: 20_000)
let records = mix.decoded()
precondition(records.count == mix.records.count, "the mix must decode in full")

/// Runs `body` and returns the CPU seconds this thread spent in it.
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

print("mix: \(mix.records.count) records, \(mix.totalBytes / mix.records.count) bytes each on average")
for pass in 1...passes {
    var line = "pass \(pass):"
    if only == nil || only == "decode" {
        var decoded = 0
        let decodeTime = cpuSeconds { decoded = mix.decodeAll() }
        precondition(decoded == records.count)
        line += " decode \(perSecond(decoded, decodeTime)) records/s"
    }
    if only == nil || only == "encode" {
        var bytes = 0
        let encodeTime = cpuSeconds { for record in records { bytes += RecordCodec.encode(record).count } }
        precondition(bytes == mix.totalBytes)
        line += " encode \(perSecond(records.count, encodeTime)) records/s"
    }
    if only == nil || only == "jsonencoder" {
        var bytes = 0
        let encodeTime = cpuSeconds {
            for record in records { bytes += (try? CanonicalJSONEncoder.foundationEncode(record).count) ?? 0 }
        }
        precondition(bytes == mix.totalBytes)
        line += " encode with JSONEncoder (before) \(perSecond(records.count, encodeTime)) records/s"
    }
    print(line)
}
