@testable import FleetSimulation
import FleetModel
import Foundation
import PropertyBased
import Testing

// The simulator's JSON reading and writing must agree with Foundation's, which the workers use.

@Suite struct JSONTests {
    /// Any scalar but the surrogates, weighted towards the ASCII controls JSON must escape.
    static let anyCharacter = zip(Gen.bool, Gen.uint32(in: 0...0x10FFFF), Gen.uint32(in: 0...0x7F)).map { ascii, any, low in
        Character(Unicode.Scalar(ascii ? low : any) ?? "?")
    }

    @Test func stringsRoundTripThroughTheParserAndTheQuoting() async {
        await propertyCheck(count: 1000, input: Self.anyCharacter.array(of: 0...12).map { String($0) }) { text in
            let quoted = JSONText.quoted(text)
            #expect((try? JSONParser.parse(quoted)) == .string(text))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            #expect(quoted == String(decoding: (try? encoder.encode(text)) ?? Data(), as: UTF8.self))
        }
    }

    @Test func theParserReadsWhatFoundationReads() throws {
        let text = #" {"a": [1, -2, 3.5, 1e3, -0.25E-2, true, false, null, {}, []], "b": "x\"\\\/\b\f\n\r\tA\u00e9\ud83d\ude00", "c": 9223372036854775807, "e": [3.0, -0.0, 2.5e1, 1e20], "d": 18446744073709551616} "#
        let ours = try JSONParser.parse(text)
        let theirs = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(ours == theirs)
        #expect(ours["d"] == .double(18446744073709551616))
    }

    @Test(arguments: [
        ("", "unexpected end of text", 0), ("{", "expected a member name", 1), (#"{"a" 1}"#, "expected ':'", 5),
        (#"{"a":1,}"#, "expected a member name", 7), ("[1 2]", "expected ',' or ']'", 3), ("01", "unexpected text after the JSON value", 1),
        ("-", "invalid number", 1), ("1.", "invalid number", 2), ("tru", "unexpected end of text", 3), ("nul!", "unexpected character", 3),
        ("\"a\u{01}\"", "control character in a string", 2), (#""\x""#, "invalid escape", 3), (#""\ud800""#, "unpaired surrogate in \\u escape", 7),
        (#""abc"#, "unterminated string", 4), ("1e999", "number out of range", 5), ("{} {}", "unexpected text after the JSON value", 3),
    ])
    func theParserRejectsMalformedTextSayingWhere(text: String, reason: String, offset: Int) {
        #expect(throws: JSONParser.Failure(offset: offset, reason: reason)) { try JSONParser.parse(text) }
    }

    @Test func deepNestingIsRefusedInsteadOfOverflowingTheStack() {
        let text = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: JSONParser.Failure(offset: 256, reason: "nested deeper than 256 levels")) { try JSONParser.parse(text) }
    }
}
