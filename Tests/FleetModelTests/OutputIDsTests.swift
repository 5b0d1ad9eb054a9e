import FleetModel
import FleetTestSupport
import PropertyBased
import Testing

@Suite("Output ids")
struct OutputIDsTests {
    /// A number of any length and sign, the extremes included: `OutputIDs` writes digits by
    /// hand (P-IDEM-1 and crash equivalence need the ids of every earlier build, byte for byte).
    static func number(_ rng: inout SplitMix64) -> Int64 {
        switch rng.int(5) {
        case 0: Int64(rng.int(10))
        case 1: Int64(rng.int(1_000_000))
        case 2: Int64(bitPattern: rng.next())
        case 3: rng.chance(0.5) ? .min : .max
        default: -Int64(rng.int(1_000))
        }
    }

    @Test("ids are written exactly as string interpolation writes them, for any coordinates (P-IDEM-1)")
    func idsMatchInterpolation() async {
        await propertyCheck(count: 2000, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var rng = SplitMix64(seed: seed)
            let topic = ["rin.delivery.inbox", "t", "rin.app.activity", "é.topic"][rng.int(4)]
            let partition = Int32(truncatingIfNeeded: Self.number(&rng))
            let offset = Self.number(&rng), start = rng.int(0...3)
            let originIndex: Int? = rng.chance(0.5) ? Int(Self.number(&rng)) : nil
            var ids = OutputIDs(
                origin: SourceCoordinates(topic: topic, partition: partition, offset: offset), originIndex: originIndex, startingAt: start)
            let stem = originIndex.map { "\(topic):\(partition):\(offset):\($0)" } ?? "\(topic):\(partition):\(offset)"
            #expect(ids.stem == stem)
            for index in start..<(start + 3) {
                #expect(ids.next() == "\(stem):\(index)")
            }
        }
    }
}
