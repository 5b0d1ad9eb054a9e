import FleetModel
import RecordCodecWorkload

// Records/s of `RecordCodec.decode` and `RecordCodec.encode` over the realistic mix, without
// the benchmark harness (for perf/valgrind, and a quick figure):
//   swift build -c release --product RecordCodecProfile && .build/release/RecordCodecProfile 5
// A second argument `decode` or `encode` measures only that side (for profiling one of them).

let passes = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 3 : 3
let only = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : nil
let mix = RecordMix.make(count: 20_000)
let records = mix.decoded()
precondition(records.count == mix.records.count, "the mix must decode in full")
let clock = ContinuousClock()

func perSecond(_ count: Int, _ elapsed: Duration) -> Int {
    Int(Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
}

print("mix: \(mix.records.count) records, \(mix.totalBytes / mix.records.count) bytes each on average")
for pass in 1...passes {
    var line = "pass \(pass):"
    if only != "encode" {
        var decoded = 0
        let decodeTime = clock.measure { decoded = mix.decodeAll() }
        precondition(decoded == records.count)
        line += " decode \(perSecond(decoded, decodeTime)) records/s"
    }
    if only != "decode" {
        var bytes = 0
        let encodeTime = clock.measure { for record in records { bytes += RecordCodec.encode(record).count } }
        precondition(bytes == mix.totalBytes)
        line += " encode \(perSecond(records.count, encodeTime)) records/s"
    }
    print(line)
}
