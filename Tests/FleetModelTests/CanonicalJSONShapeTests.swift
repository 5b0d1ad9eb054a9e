@testable import FleetModel
import FleetTestSupport
import Foundation
import PropertyBased
import Testing

/// A random `Encodable` whose `encode(to:)` exercises the container API the way hand-written
/// conformances do: nested and super encoders, containers asked for twice, members written
/// after their nested containers' siblings, duplicate keys, arrays of arrays.
indirect enum Shape: Encodable {
    enum How { case direct, nested, superEncoder, later }
    case string(String), int(Int), double(Double), bool(Bool), null, absent
    case keyed([(key: String, how: How, value: Shape)], split: Bool)
    case unkeyed([(how: How, value: Shape)])

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .string(let s): var c = encoder.singleValueContainer(); try c.encode(s)
        case .int(let i): var c = encoder.singleValueContainer(); try c.encode(i)
        case .double(let d): var c = encoder.singleValueContainer(); try c.encode(d)
        case .bool(let b): var c = encoder.singleValueContainer(); try c.encode(b)
        case .null, .absent: var c = encoder.singleValueContainer(); try c.encodeNil()
        case .keyed(let members, let split):
            var later: [() throws -> Void] = []
            for (i, member) in members.enumerated() {
                var c = encoder.container(keyedBy: CanonicalJSONPathKey.self)
                if split && i == members.count / 2 { c = encoder.container(keyedBy: CanonicalJSONPathKey.self) }
                try Self.write(member.value, member.how, key: CanonicalJSONPathKey(stringValue: member.key), into: &c, later: &later)
            }
            if members.isEmpty && split { _ = encoder.container(keyedBy: CanonicalJSONPathKey.self) }
            for fill in later { try fill() }
        case .unkeyed(let elements):
            var c = encoder.unkeyedContainer()
            var later: [() throws -> Void] = []
            for element in elements {
                switch (element.how, element.value) {
                case (.nested, .keyed(let members, _)), (.later, .keyed(let members, _)):
                    var n = c.nestedContainer(keyedBy: CanonicalJSONPathKey.self)
                    if element.how == .later { later.append { try Self.fill(&n, members) } } else { try Self.fill(&n, members) }
                case (.nested, .unkeyed(let inner)), (.later, .unkeyed(let inner)):
                    var n = c.nestedUnkeyedContainer()
                    if element.how == .later { later.append { try Self.fill(&n, inner) } } else { try Self.fill(&n, inner) }
                case (.superEncoder, let value):
                    try value.encode(to: c.superEncoder())
                default:
                    try c.encode(element.value)
                }
            }
            for fill in later { try fill() }
        }
    }

    static func write(
        _ value: Shape, _ how: How, key: CanonicalJSONPathKey, into c: inout KeyedEncodingContainer<CanonicalJSONPathKey>,
        later: inout [() throws -> Void]
    ) throws {
        switch (how, value) {
        case (_, .absent):
            try c.encodeIfPresent(Optional<String>.none, forKey: key)
        case (.nested, .keyed(let members, _)), (.later, .keyed(let members, _)):
            var n = c.nestedContainer(keyedBy: CanonicalJSONPathKey.self, forKey: key)
            if how == .later { later.append { try fill(&n, members) } } else { try fill(&n, members) }
        case (.nested, .unkeyed(let elements)), (.later, .unkeyed(let elements)):
            var n = c.nestedUnkeyedContainer(forKey: key)
            if how == .later { later.append { try fill(&n, elements) } } else { try fill(&n, elements) }
        case (.superEncoder, _):
            try value.encode(to: key.stringValue == "super" ? c.superEncoder() : c.superEncoder(forKey: key))
        default:
            try c.encode(value, forKey: key)
        }
    }

    static func fill(_ c: inout KeyedEncodingContainer<CanonicalJSONPathKey>, _ members: [(key: String, how: How, value: Shape)]) throws {
        var later: [() throws -> Void] = []
        for member in members {
            try write(member.value, member.how, key: CanonicalJSONPathKey(stringValue: member.key), into: &c, later: &later)
        }
        for f in later { try f() }
    }

    static func fill(_ c: inout any UnkeyedEncodingContainer, _ elements: [(how: How, value: Shape)]) throws {
        for element in elements { try c.encode(element.value) }
    }

    /// Keys of members written through a nested or super encoder are unique in their object:
    /// `JSONEncoder` traps on some reuses (e.g. a keyed container where an array was). Direct
    /// members may repeat a key among themselves (the later wins).
    static func random(_ dice: inout Dice, depth: Int = 0) -> Shape {
        switch dice.below(depth > 3 ? 6 : 9) {
        case 0: return .string(CanonicalJSONEncoderTests.awkwardString(&dice))
        case 1: return .int(Int(truncatingIfNeeded: dice.next()) >> dice.below(64))
        case 2: return .double(dice.pick(CanonicalJSONEncoderTests.edgeDoubles))
        case 3: return .bool(dice.chance(50))
        case 4: return .null
        case 5: return .absent
        case 6, 7:
            var members: [(String, How, Shape)] = []
            var special = 0
            for _ in 0..<dice.below(6) {
                let value = random(&dice, depth: depth + 1)
                var how = dice.pick([How.direct, .direct, .nested, .superEncoder, .later])
                if case .keyed = value {} else if case .unkeyed = value {} else if how != .superEncoder { how = .direct }
                if how == .direct {
                    members.append((dice.pick(["a", "b", "é", "e\u{301}", "B", "a/b", "\u{1}", "\"", "aa"]), how, value))
                } else {
                    special += 1
                    members.append((dice.chance(10) && special == 1 ? "super" : "n\(special)", how, value))
                }
            }
            return .keyed(members, split: dice.chance(25))
        default:
            return .unkeyed((0..<dice.below(5)).map { _ in
                (dice.pick([How.direct, .direct, .nested, .superEncoder, .later]), random(&dice, depth: depth + 1))
            })
        }
    }
}

@Suite("CanonicalJSONEncoder handles the whole container API as JSONEncoder does")
struct CanonicalJSONShapeTests {
    @Test("random container programs: nested, super and split containers, late writes, duplicate keys")
    func randomShapes() async {
        await propertyCheck(count: 3000, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let shape = Shape.random(&dice)
            expectSameBytes(shape, "seed \(seed): \(shape)")
            expectSameBytes([shape, shape], "seed \(seed)")
        }
    }

    struct Everything: Encodable {
        var date = Date(timeIntervalSinceReferenceDate: 123.25)
        var dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSinceReferenceDate: -1e9)]
        var data = Data([0, 1, 2, 250, 251, 252, 253, 254, 255])
        var emptyData = Data()
        var url = URL(string: "https://example.com/a/b?c=d&e=%20")
        var decimal = Decimal(string: "12345.678900")
        var decimals = [Decimal(string: "-0.5"), Decimal(0)]
        var intKeys: [Int: String] = [10: "ten", 2: "two", -1: "minus", 100: "hundred"]
        var stringKeys: [String: [Int]] = ["b": [1], "a": [], "A": [2, 3], "": [4]]
        var uuidKeys: [Bool: Int] = [true: 1, false: 0]
        var nested: [[[String]]] = [[["a"], []], [], [["b", "c"]]]
        var optionals: [Int?] = [1, nil, 3]
        var none: String?
        var set: Set<Int>? = [3]
        var int8: [Int8] = [-128, 127]
        var uint64s: [UInt64] = [0, .max]
        var floats: [Float] = [0.1, 1e30, -0.0]
        var doubles: [Double] = [0.1, 1e21, -0.0]
        var empty = EmptyValue()
        var emptyList: [EmptyValue] = [EmptyValue(), EmptyValue()]
    }

    struct EmptyValue: Encodable { func encode(to encoder: any Encoder) throws {} }

    @Test("Date, Data, URL, Decimal, dictionaries with Int and Bool keys, nested arrays, optionals, empty values")
    func foundationTypes() {
        expectSameBytes(Everything())
        expectSameBytes([Everything()])
        expectSameBytes(Date(timeIntervalSinceReferenceDate: 0.5))
        expectSameBytes(Data("hello".utf8))
        expectSameBytes(Decimal(string: "3.14"))
        expectSameBytes("a top-level string/with slash")
        expectSameBytes(42)
        expectSameBytes(Optional<Int>.none)
    }

    @Test("a top-level value that encodes nothing is an error, as in JSONEncoder")
    func emptyTopLevel() {
        #expect(throws: EncodingError.self) { try CanonicalJSONEncoder.encode(EmptyValue()) }
        expectSameBytes(EmptyValue())
    }

    struct Duplicates: Encodable {
        var mode: Int
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CanonicalJSONPathKey.self)
            let k = CanonicalJSONPathKey(stringValue: "k")
            switch mode {
            case 0:  // a value written twice: the later wins
                try c.encode(1, forKey: k); try c.encode("two", forKey: k)
            case 1:  // a nested container asked for twice under one key: one object
                var a = c.nestedContainer(keyedBy: CanonicalJSONPathKey.self, forKey: k)
                try a.encode(1, forKey: .init(stringValue: "x"))
                var b = c.nestedContainer(keyedBy: CanonicalJSONPathKey.self, forKey: k)
                try b.encode(2, forKey: .init(stringValue: "y"))
                try a.encode(3, forKey: .init(stringValue: "z"))
            case 2:  // a nested container, then a value under its key: the value wins
                var a = c.nestedContainer(keyedBy: CanonicalJSONPathKey.self, forKey: k)
                try a.encode(1, forKey: .init(stringValue: "x"))
                try c.encode(5, forKey: k)
            case 3:  // an object value, then a nested container under its key: merged (JSONEncoder's path)
                try c.encode(["x": 1], forKey: k)
                var a = c.nestedContainer(keyedBy: CanonicalJSONPathKey.self, forKey: k)
                try a.encode(2, forKey: .init(stringValue: "y"))
            case 4:  // a super encoder and a direct write of the same key
                try c.encode(1, forKey: k)
                try "s".encode(to: c.superEncoder(forKey: k))
            case 5:  // canonically equivalent keys, different bytes: one key in JSONEncoder's dictionary
                try c.encode(1, forKey: .init(stringValue: "\u{e9}"))
                try c.encode(2, forKey: .init(stringValue: "e\u{301}"))
            case 6:  // keys that need escaping sort by their unescaped bytes
                for key in ["\"", "\u{1}", "\\", "\u{1f}", " ", "!", "]", "a\u{0}"] { try c.encode(key, forKey: .init(stringValue: key)) }
            default:  // an array value, then a nested unkeyed container under its key: appended
                try c.encode([1, 2], forKey: k)
                var a = c.nestedUnkeyedContainer(forKey: k)
                try a.encode(3)
            }
        }
    }

    @Test("duplicate keys and merged containers resolve as in JSONEncoder", arguments: 0..<8)
    func duplicates(_ mode: Int) {
        expectSameBytes(Duplicates(mode: mode))
        expectSameBytes(["outer": Duplicates(mode: mode)])
    }

    final class Escapee: Encodable, @unchecked Sendable {
        var kept: KeyedEncodingContainer<CanonicalJSONPathKey>?
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CanonicalJSONPathKey.self)
            try c.encode(1, forKey: .init(stringValue: "a"))
            kept = c
        }
    }

    struct UsesEscaped: Encodable {
        let escapee = Escapee()
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CanonicalJSONPathKey.self)
            try c.encode(escapee, forKey: .init(stringValue: "e"))
            try escapee.kept?.encode(2, forKey: .init(stringValue: "late"))
            try c.encode(3, forKey: .init(stringValue: "b"))
        }
    }

    @Test("a container used after its value finished: JSONEncoder's bytes (it keeps the late write)")
    func escapedContainer() {
        let new = try? CanonicalJSONEncoder.encode(UsesEscaped())
        let old = try? CanonicalJSONEncoder.foundationEncode(UsesEscaped())
        #expect(new != nil && new == old)
    }

    @Test("the appending variant keeps what the buffer held, also when encoding fails")
    func appending() throws {
        var buffer = Array("prefix:".utf8)
        try CanonicalJSONEncoder.encode(["b": 1, "a": 2], appendingTo: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"prefix:{"a":2,"b":1}"#)
        #expect(throws: EncodingError.self) { try CanonicalJSONEncoder.encode([Double.nan], appendingTo: &buffer) }
        #expect(throws: EncodingError.self) { try CanonicalJSONEncoder.encode(EmptyValue(), appendingTo: &buffer) }
        #expect(String(decoding: buffer, as: UTF8.self) == #"prefix:{"a":2,"b":1}"#)
        try CanonicalJSONEncoder.encode(Duplicates(mode: 3), appendingTo: &buffer)  // JSONEncoder's path
        #expect(String(decoding: buffer, as: UTF8.self) == #"prefix:{"a":2,"b":1}{"k":{"x":1,"y":2}}"#)
    }

    @Test("codingPath inside nested values names the keys and indices on the way")
    func codingPaths() throws {
        struct Probe: Encodable {
            func encode(to encoder: any Encoder) throws {
                var c = encoder.singleValueContainer()
                try c.encode(encoder.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: "."))
            }
        }
        struct Holder: Encodable { var outer: [String: [Probe]] }
        expectSameBytes(Holder(outer: ["x": [Probe(), Probe()]]))
    }
}
