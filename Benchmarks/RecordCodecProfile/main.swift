import FleetModel
import RecordCodecWorkload

// Records/s of `RecordCodec.decode` and `RecordCodec.encode` over the realistic mix, without
// the benchmark harness (for perf/valgrind, and a quick figure):
//   swift build -c release --product RecordCodecProfile && .build/release/RecordCodecProfile 5

let passes = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 3 : 3
let mix = RecordMix.make(count: 20_000)
let records = mix.decoded()
precondition(records.count == mix.records.count, "the mix must decode in full")
let clock = ContinuousClock()

func perSecond(_ count: Int, _ elapsed: Duration) -> Int {
    Int(Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
}

print("mix: \(mix.records.count) records, \(mix.totalBytes / mix.records.count) bytes each on average")
for pass in 1...passes {
    var decoded = 0
    let decodeTime = clock.measure { decoded = mix.decodeAll() }
    var bytes = 0
    let encodeTime = clock.measure { for record in records { bytes += RecordCodec.encode(record).count } }
    precondition(decoded == records.count && bytes == mix.totalBytes)
    print("pass \(pass): decode \(perSecond(decoded, decodeTime)) records/s, encode \(perSecond(records.count, encodeTime)) records/s")
}
