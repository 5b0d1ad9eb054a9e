import FleetModel
import FleetTestSupport
import PropertyBased
import Testing

@Suite("Log order of derived ids")
struct LogOrderTests {
    @Test("P-BUD-2 ids compare by offset and index as numbers, not as text")
    func numericOffsets() {
        #expect(LogOrder.precedes("rin.delivery.inbox:0:9:0", "rin.delivery.inbox:0:10:0"))
        #expect(!LogOrder.precedes("rin.delivery.inbox:0:10:0", "rin.delivery.inbox:0:9:0"))
        #expect(LogOrder.precedes("rin.delivery.inbox:0:10:2", "rin.delivery.inbox:0:10:11"))
        #expect(!LogOrder.precedes("rin.delivery.inbox:0:10:2", "rin.delivery.inbox:0:10:2"))
        // Other ids come after log-derived ones, in text order among themselves.
        #expect(LogOrder.precedes("rin.delivery.inbox:0:10:2", "intent-7"))
        #expect(LogOrder.precedes("a-1", "b-0"))
    }

    @Test("P-BUD-2 ids of a record a worker wrote into an inbox compare offset, originIndex and index as numbers")
    func originIds() {
        // Offset first, whatever the originIndex and index.
        #expect(LogOrder.precedes("rin.score.batches:0:9:7:7", "rin.score.batches:0:10:0:0"))
        #expect(!LogOrder.precedes("rin.score.batches:0:10:0:0", "rin.score.batches:0:9:7:7"))
        // Then the position among the origin's outputs, as a number.
        #expect(LogOrder.precedes("rin.score.batches:0:3:9:5", "rin.score.batches:0:3:10:0"))
        // Then the index within one origin: the order the ids were handed out in.
        #expect(LogOrder.precedes("rin.score.batches:0:3:1:2", "rin.score.batches:0:3:1:10"))
        #expect(!LogOrder.precedes("rin.score.batches:0:3:1:2", "rin.score.batches:0:3:1:2"))
        // A shorter id whose numbers begin the longer one comes first.
        #expect(LogOrder.precedes("rin.score.batches:0:3:1", "rin.score.batches:0:3:1:0"))
        #expect(!LogOrder.precedes("rin.score.batches:0:3:1:0", "rin.score.batches:0:3:1"))
        #expect(LogOrder.precedes("rin.score.batches:0:3:1:0", "rin.score.batches:0:3:2"))
        // Different logs have no order of their own: their names' text decides.
        #expect(LogOrder.precedes("rin.app.activity:0:50:0", "rin.delivery.inbox:0:1:0"))
        #expect(LogOrder.precedes("rin.reminders:0:7:0:0", "rin.score.batches:0:0:0:0"))
        // Still log-derived: before ids of other shapes.
        #expect(LogOrder.precedes("rin.score.batches:0:3:1:0", "rin.delivery.inbox:0:tick:1700000000000"))
        #expect(LogOrder.precedes("rin.score.batches:0:3:1:0", "i1"))
    }

    /// The order before ids gained an origin index: `topic:partition` as text, then offset and
    /// index as numbers; anything else after, as text.
    static func fourPartOrder(_ a: String, _ b: String) -> Bool {
        func parts(_ id: String) -> (prefix: Substring, offset: Int64, index: Int64)? {
            let pieces = id.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count == 4, let offset = Int64(pieces[2]), let index = Int64(pieces[3]) else { return nil }
            return (id[..<pieces[1].endIndex], offset, index)
        }
        switch (parts(a), parts(b)) {
        case let (x?, y?): return (x.prefix, x.offset, x.index) < (y.prefix, y.offset, y.index)
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return a < b
        }
    }

    /// An id like the fleet's, from a small alphabet so that ties and shared prefixes are common.
    static func id(_ rng: inout SplitMix64, parts: ClosedRange<Int>) -> String {
        let topics = ["rin.delivery.inbox", "rin.app.activity", "rin.score.batches"]
        var pieces = [topics[rng.int(topics.count)], String(rng.int(3))]
        for _ in 0..<(rng.int(parts) - 2) { pieces.append(String(rng.int(12))) }
        return pieces.joined(separator: ":")
    }

    @Test("4-part ids keep their order exactly")
    func fourPartIdsUnchanged() async {
        await propertyCheck(count: 2000, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var rng = SplitMix64(seed: seed)
            let a = Self.id(&rng, parts: 4...4), b = Self.id(&rng, parts: 4...4)
            #expect(LogOrder.precedes(a, b) == Self.fourPartOrder(a, b), "\(a) vs \(b)")
        }
    }

    @Test("the order is a strict total order over ids of the fleet's shapes, so sorting is well defined")
    func strictTotalOrder() async {
        await propertyCheck(count: 2000, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var rng = SplitMix64(seed: seed)
            let ids = (0..<3).map { _ in rng.chance(0.1) ? "i\(rng.int(3))" : Self.id(&rng, parts: 3...5) }
            let (a, b, c) = (ids[0], ids[1], ids[2])
            #expect(!LogOrder.precedes(a, a))
            if a != b { #expect(LogOrder.precedes(a, b) != LogOrder.precedes(b, a), "\(a) vs \(b)") }
            if LogOrder.precedes(a, b) && LogOrder.precedes(b, c) { #expect(LogOrder.precedes(a, c), "\(a) < \(b) < \(c)") }
        }
    }
}
