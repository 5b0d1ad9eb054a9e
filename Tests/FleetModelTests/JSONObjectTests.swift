@testable import FleetModel
import FleetTestSupport
import Foundation
import PropertyBased
import Testing

// `JSONObject` keeps its members in name order instead of hashing them, and must still behave
// as the `[String: JSONValue]` it replaced: every test here runs the same operations on both and
// compares. Names come from `CanonicalJSONEncoderTests.awkwardPieces`, which hold canonically
// equivalent spellings (`"é"`, `"e\u{301}"`), NUL, control and non-ASCII bytes.
@Suite("JSONObject behaves as a [String: JSONValue], kept in name order")
struct JSONObjectTests {
    /// A name of one to three awkward pieces, or a name that shares a long stem with others.
    static func name(_ dice: inout Dice) -> String {
        if dice.chance(30) { return String("abcdefghijkl".prefix(dice.below(13))) + dice.pick(["", "\u{0}", "é", "e\u{301}", "K", "\u{212A}", "z"]) }
        return (0..<(1 + dice.below(3))).map { _ in dice.pick(CanonicalJSONEncoderTests.awkwardPieces) }.joined()
    }

    /// Checks `object` against its `model`: the same members found by every name tried, the same
    /// count, and the members in the byte order of their names, each name once.
    static func expectSame(_ object: JSONObject, _ model: [String: JSONValue], tried names: [String], _ comment: String) {
        #expect(object.count == model.count, "\(comment)")
        for name in names { #expect(object[name] == model[name], "\(comment): \(name.debugDescription)") }
        for member in object { #expect(model[member.key] == member.value, "\(comment): \(member.key.debugDescription)") }
        let keys = Array(object.keys)
        for (a, b) in zip(keys, keys.dropFirst()) {
            #expect(Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)), "\(comment): \(a.debugDescription) before \(b.debugDescription)")
        }
    }

    @Test("every insert, update and removal finds what a dictionary finds, in name order")
    func operationsMatchADictionary() async {
        await propertyCheck(count: 1500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            var object = JSONObject()
            var model: [String: JSONValue] = [:]
            var names: [String] = []
            for step in 0..<(1 + dice.below(40)) {
                let name = names.isEmpty || dice.chance(60) ? Self.name(&dice) : dice.pick(names)
                names.append(name)
                let value = JSONValue.int(Int64(dice.below(1000)))
                switch dice.below(4) {
                case 0:
                    #expect(object.updateValue(value, forKey: name) == model.updateValue(value, forKey: name), "step \(step)")
                case 1:
                    #expect(object.removeValue(forKey: name) == model.removeValue(forKey: name), "step \(step)")
                case 2:
                    object[name] = nil
                    model[name] = nil
                default:
                    object[name] = value
                    model[name] = value
                }
                // A dictionary keeps the name a member was added with; so must the object.
                if let position = object.index(forKey: name), let index = model.index(forKey: name) {
                    #expect(Array(object[position].key.utf8) == Array(model[index].key.utf8), "step \(step)")
                }
            }
            Self.expectSame(object, model, tried: names + (0..<5).map { _ in Self.name(&dice) }, "seed \(seed)")
        }
    }

    @Test("equal and unequal as dictionaries are, whatever order the members came in, and equal objects hash alike")
    func equalityAndHashMatchADictionary() async {
        await propertyCheck(count: 1500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            var pairs: [(String, JSONValue)] = []
            for _ in 0..<dice.below(8) { pairs.append((Self.name(&dice), .int(Int64(dice.below(3))))) }
            // The same pairs in another order, then perhaps one value or name changed.
            var other = pairs
            for i in other.indices.reversed() where i > 0 { other.swapAt(i, dice.below(i + 1)) }
            if !other.isEmpty, dice.chance(40) {
                let i = dice.below(other.count)
                other[i] = dice.chance(50) ? (other[i].0, .int(Int64(dice.below(3)))) : (Self.name(&dice), other[i].1)
            }
            func build(_ pairs: [(String, JSONValue)]) -> (JSONObject, [String: JSONValue]) {
                var object = JSONObject(), model: [String: JSONValue] = [:]
                for (name, value) in pairs { object[name] = value; model[name] = value }
                return (object, model)
            }
            let (a, modelA) = build(pairs), (b, modelB) = build(other)
            #expect((a == b) == (modelA == modelB), "seed \(seed): \(a) vs \(b)")
            if a == b { #expect(a.hashValue == b.hashValue, "seed \(seed)") }
            #expect(JSONValue.object(a) == JSONValue.object(b) || modelA != modelB)
        }
    }

    @Test("written as JSONEncoder writes the dictionary, and read back by JSONDecoder as the same object")
    func codableMatchesADictionary() async throws {
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            var object = JSONObject(), model: [String: JSONValue] = [:]
            for _ in 0..<dice.below(8) {
                let (name, value) = (Self.name(&dice), CanonicalJSONEncoderTests.awkwardJSON(&dice, depth: 2))
                object[name] = value
                model[name] = value
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let written = try? encoder.encode(object), expected = try? encoder.encode(model)
            #expect(written == expected, "seed \(seed)")
            #expect((try? CanonicalJSONEncoder.encode(object)) == expected.map(Array.init), "seed \(seed)")
            // Read back: as JSONDecoder reads the dictionary (a double may come back an integer,
            // so against the dictionary read the same way), and by the fleet's own readers.
            guard let written else { return }
            let decoded = try? JSONDecoder().decode(JSONObject.self, from: written)
            let decodedModel = try? JSONDecoder().decode([String: JSONValue].self, from: written)
            if let decoded, let decodedModel {
                Self.expectSame(decoded, decodedModel, tried: Array(model.keys), "seed \(seed), read back")
            } else {
                Issue.record("seed \(seed): \(String(decoding: written, as: UTF8.self)) not read back")
            }
            #expect((try? StateImageFormat.jsonObject(Array(written), "object")) == decoded, "seed \(seed)")
            let plain = Array(written).withUnsafeBufferPointer(PlainRecordDecoding.plainFreeForm)
            #expect(plain == nil || plain == decoded, "seed \(seed)")
        }
    }

    @Test("literals, filter and uniqueKeysWithValues give name order; a name read twice keeps its first value, as the dictionary did")
    func literalsFilterAndRepeatedNames() throws {
        let object: JSONObject = ["b": 2, "a": 1, "é": "x"]
        #expect(Array(object.keys) == ["a", "b", "é"])
        #expect(object["e\u{301}"] == "x")
        #expect(object.filter { $0.key != "b" } == ["a": 1, "é": "x"])
        #expect(JSONObject(uniqueKeysWithValues: [("z", 1), ("y", 2)]) == ["y": 2, "z": 1])
        #expect(JSONObject() == [:] && JSONObject().isEmpty)
        // The same name twice in JSON text, spelled alike or canonically equal: the tree keeps
        // the first, and the plain reader leaves such text to the tree.
        for text in [#"{"é":1,"é":2}"#, "{\"é\":1,\"e\u{301}\":2}"] {
            let bytes = Array(text.utf8)
            #expect(try StateImageFormat.jsonObject(bytes, "data") == ["é": 1], "\(text)")
            #expect(bytes.withUnsafeBufferPointer(PlainRecordDecoding.plainFreeForm) == nil, "\(text)")
        }
    }
}
