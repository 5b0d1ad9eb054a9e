import DeliveryPolicy
import FleetModel
import FleetTestSupport
import Foundation
import PropertyBased
import Testing

/// The delivery state's binary image (Protos/fleet_state.proto), over every state the engine
/// reaches on random traffic (`RandomTraffic`; the same states `StateEncodingTests` checks).
@Suite struct StateImageTests {
    @Test("round trip: every state the engine reaches decodes from its binary image to itself, and re-encodes to the same bytes")
    func binaryRoundTrip() async {
        let checked = StatesChecked()
        await propertyCheck(count: 150, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            for state in Self.states(seed: seed) {
                let image = try state.binaryImage()
                #expect(image.first == 0x08, "an image starts with its format version (field 1)")
                let back = try DeliveryState(binaryImage: image)
                #expect(back == state, "seed \(seed): \(String(decoding: state.serialized(), as: UTF8.self))")
                #expect(try back.binaryImage() == image, "seed \(seed): image not deterministic")
            }
            checked.add(1)
        }
        #expect(checked.value == 150)
    }

    // DESIGN.md principle 7 (RecordLimits): the runtime skips encoding a state at a change when
    // this bound is under the limit, so a bound below the true size would let an oversized state
    // through.
    @Test("size bound: never below the binary image's true size, on every state the engine reaches")
    func sizeBoundHolds() async {
        let checked = StatesChecked()
        await propertyCheck(count: 150, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            for state in Self.states(seed: seed) {
                let size = try state.binaryImage().count
                let bound = try #require(state.binaryImageSizeBound())
                #expect(bound >= size, "seed \(seed): bound \(bound) < size \(size)")
                // Loose enough to be useful: a bound far above the size would encode needlessly.
                #expect(bound <= 8 * size + 512, "seed \(seed): bound \(bound) for \(size) bytes")
            }
            checked.add(1)
        }
        #expect(checked.value == 150)
    }

    @Test("size bound: holds for intent data with escapes, non-ASCII text, numbers and nesting")
    func sizeBoundHoldsForHostileData() throws {
        var scenario = try Scenario(profile: EnginePropertyTests.profile)
        let names = [#"\u0001\u001f"#, #"q\"uo\\te"#, "Zoë 😀 日本", String(repeating: #"\n"#, count: 300), "plain"]
        // Free text at its longest (`RecordLimits.freeTextBytes`), all control characters: six
        // bytes each in the state's JSON.
        let notes = Array(repeating: "\"" + String(repeating: #"\u0001"#, count: 1_000) + "\"", count: 30).joined(separator: ",")
        for (n, name) in names.enumerated() {
            try scenario.feed("""
                {"at":"2026-03-10T10:00:0\(n)Z","value":{"type":"intent","id":"e\(n)","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["\(name)"],"contact_ids":["c\(n)"],"n":[1.5e-300,-12345678901234,{"deep":[null,true,"\(name)"]}],"notes":[\(n == 4 ? notes : "")]}}}
                """)
            // Every name is in the state, with its escapes: a bound that counted a string's
            // bytes once would fall short by the escapes of the long control-character name.
            var pending = 0
            for state in scenario.deliveryStates.values {
                let size = try state.binaryImage().count
                let bound = try #require(state.binaryImageSizeBound())
                #expect(bound >= size, "name \(n): bound \(bound) < size \(size)")
                if size > 200 { pending += 1 }
                if n == 4 { #expect(size > 180_000, "the notes must be in the state") }
            }
            #expect(pending > 0, "the intents' data must be in the state for this to check anything")
        }
    }

    @Test("rolling upgrade: a state read from the JSON image of the build before writes a binary image that decodes to the same state")
    func jsonToBinary() async {
        await propertyCheck(count: 60, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            for state in Self.states(seed: seed) {
                let fromJSON = try DeliveryState(serialized: state.serialized())
                let upgraded = try DeliveryState(binaryImage: try fromJSON.binaryImage())
                #expect(upgraded == fromJSON)
                // And what people see (JSON) is unchanged by the trip through binary.
                #expect(upgraded.serialized() == state.serialized())
            }
        }
    }

    @Test("idle state stays within 200 bytes; binary images are smaller than JSON ones (sizes printed)")
    func sizes() throws {
        // An idle user: signed up, opened the app, got a score, nothing pending.
        var scenario = try Scenario(profile: EnginePropertyTests.profile)
        try scenario.feed("""
            {"at":"2026-03-01T15:00:00Z","value":{"type":"user.signed_up","time_zone":"Europe/Lisbon"}}
            {"at":"2026-03-02T08:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-02T09:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":50,"new":53,"label":"Building"}}}
            """)
        scenario.advance(to: Timestamp(rfc3339: "2026-03-03T12:00:00Z") ?? Timestamp(millisecondsSinceEpoch: 0))
        let idle = try #require(scenario.deliveryStates.values.first)
        var json: [Int] = []
        var binary: [Int] = []
        for seed in UInt64(1)...UInt64(40) {
            for state in Self.states(seed: seed) {
                json.append(state.serialized().count)
                binary.append((try? state.binaryImage().count) ?? Int.max)
            }
        }
        let idleImage = (try? idle.binaryImage()) ?? []
        #expect(!idleImage.isEmpty && idleImage.count <= 200)
        #expect(binary.reduce(0, +) < json.reduce(0, +))
        let medianJSON = json.sorted()[json.count / 2], medianBinary = binary.sorted()[binary.count / 2]
        print("state images over \(json.count) engine states: JSON median \(medianJSON) B, max \(json.max() ?? 0) B, total \(json.reduce(0, +)) B; binary median \(medianBinary) B, max \(binary.max() ?? 0) B, total \(binary.reduce(0, +)) B; idle example JSON \(idle.serialized().count) B, binary \(idleImage.count) B")
    }

    @Test("hostile images: truncations, flipped bytes and junk give a StateImageError, never a trap")
    func hostileBytes() async throws {
        // Not an image at all.
        for junk: [UInt8] in [[], [0x00], [0xFF, 0xFF, 0xFF], Array("not a state".utf8), [0x08, 0x02], [0x08, 0x09]] {
            #expect(throws: StateImageError.self) { try DeliveryState(binaryImage: junk) }
        }
        await propertyCheck(count: 60, input: zip(Gen.uint64(in: 0...UInt64.max), Gen.uint64(in: 0...UInt64.max))) { seed, noise in
            var generator = SplitMix64(seed: noise)
            for state in Self.states(seed: seed).prefix(20) {
                let image = try state.binaryImage()
                // Every prefix decodes or throws; so does the image with bytes changed.
                for length in stride(from: 0, to: image.count, by: max(1, image.count / 16)) {
                    _ = try? DeliveryState(binaryImage: Array(image[..<length]))
                }
                var mutated = image
                for _ in 0..<4 where !mutated.isEmpty {
                    mutated[Int.random(in: mutated.indices, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                _ = try? DeliveryState(binaryImage: mutated)
            }
        }
    }

    /// Distinct states the engine reaches on the random traffic of `seed` (an issue is
    /// recorded, and none returned, if the scenario cannot be built).
    static func states(seed: UInt64) -> Set<DeliveryState> {
        let traffic = RandomTraffic(seed: seed)
        guard var scenario = try? Scenario(profile: EnginePropertyTests.profile) else {
            Issue.record("no scenario")
            return []
        }
        var states: Set<DeliveryState> = []
        for line in traffic.lines {
            try? scenario.feed(line.input)
            states.formUnion(scenario.deliveryStates.values)
        }
        scenario.advance(to: traffic.end)
        states.formUnion(scenario.deliveryStates.values)
        return states
    }
}
