@testable import FleetModel
import FleetTestSupport
import PropertyBased
import Testing

// `RecordCodec.decode` reads plainly written intents straight from their bytes
// (`IntentByteDecoding`) and everything else through the tree. The byte path must take the
// records the fleet writes (else it is dead weight) and give exactly what the tree and
// `JSONDecoder` give; anything unusual must be left to the tree, which alone reports errors.
// `RecordCodecDifferentialTests` checks random, mutated and malformed intents end to end.
struct IntentByteDecodingTests {
    /// An intent as upstream workers write them: ASCII ids and names, any free-form data.
    static func plainIntent(_ dice: inout Dice) -> Intent {
        let data = RecordCodecDifferentialTests.randomJSON(&dice).objectValue ?? ["k": .int(Int64(dice.below(1000)))]
        return Intent(
            id: "i\(dice.next() % 1_000_000)", userId: "u\(dice.below(100_000))",
            notification: dice.pick(["score.updated", "contacts.dedup_ready", "security.access_request", "x"]),
            category: dice.pick(["SCORE", "CONTACTS", "SECURITY"]), data: data,
            expiresAt: dice.chance(50) ? Timestamp(millisecondsSinceEpoch: Int64(dice.below(4_000_000_000)) * 1000) : nil,
            source: SourceCoordinates(
                topic: dice.pick(["rin.upstream", "t", "score-worker.log"]),
                partition: dice.chance(90) ? Int32(dice.below(64)) : Int32(truncatingIfNeeded: dice.next()),
                offset: Int64(dice.next() % 1_000_000_000_000_000) * (dice.chance(95) ? 1 : -1)))
    }

    static func byteIntent(_ bytes: [UInt8]) -> Intent? {
        bytes.withUnsafeBufferPointer(IntentByteDecoding.intent)
    }

    /// The record with insignificant whitespace around its colons and commas.
    static func spaced(_ bytes: [UInt8], _ dice: inout Dice) -> [UInt8] {
        var spaced = Array(" \n".utf8)
        var inString = false, escaped = false
        for byte in bytes {
            spaced.append(byte)
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: ":") {
                spaced.append(contentsOf: dice.pick([[], [0x20], [0x0A, 0x09], [0x0D, 0x0A]]))
            }
        }
        return spaced + Array("\t ".utf8)
    }

    @Test("intents as the fleet writes them, also spaced out, are read from the bytes, as JSONDecoder reads them")
    func plainIntentsTakeTheBytePath() async {
        await propertyCheck(count: 600, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let intent = Self.plainIntent(&dice)
            let bytes = RecordCodec.encode(.intent(intent))
            for variant in [bytes, Self.spaced(bytes, &dice)] {
                // Against JSONDecoder, not `intent`: data's integral doubles come back as integers.
                guard case .success(.intent(let expected)) = FoundationRecordDecoding.decode(variant) else {
                    Issue.record("JSONDecoder does not read \(String(decoding: variant, as: UTF8.self))")
                    continue
                }
                #expect(Self.byteIntent(variant) == expected, "not read from the bytes: \(String(decoding: variant, as: UTF8.self))")
                #expect((try? RecordCodec.decode(variant)) == .intent(expected))
            }
        }
    }

    static let plain = #"{"category":"SCORE","data":{"n":1,"names":["A","B"]},"id":"i1","notification":"score.updated","source":{"offset":5,"partition":0,"topic":"t"},"type":"intent","user_id":"u1","v":1}"#

    @Test("the plain record the variants below start from is read from the bytes")
    func plainRecordIsReadFromTheBytes() throws {
        let intent = try #require(Self.byteIntent(Array(Self.plain.utf8)))
        #expect(intent.id == "i1" && intent.userId == "u1" && intent.category == "SCORE" && intent.expiresAt == nil)
        #expect(intent.source == SourceCoordinates(topic: "t", partition: 0, offset: 5))
        #expect(intent.data == ["n": .int(1), "names": .array(["A", "B"])])
        #expect(Self.byteIntent(Array(Self.plain.replacingOccurrences(#""v":1"#, #""v":1,"expires_at":null"#).utf8)) == intent)
        // The longest id no size limit can refuse.
        let longest = String(repeating: "i", count: RecordLimits.shortestString)
        let long = Self.plain.replacingOccurrences(#""id":"i1""#, "\"id\":\"\(longest)\"")
        #expect(Self.byteIntent(Array(long.utf8))?.id == longest)
        RecordCodecDifferentialTests.compare(Array(long.utf8))
    }

    @Test("anything unusual about an intent is left to the tree, which decodes it as JSONDecoder does", arguments: [
        ("a byte order mark", "\u{FEFF}" + plain),
        ("an escape in a string", plain.replacingOccurrences(#""id":"i1""#, #""id":"i\u0031""#)),
        ("an escaped member name", plain.replacingOccurrences(#""v":1"#, #""\u0076":1"#)),
        ("a duplicate member", plain.replacingOccurrences(#""v":1"#, #""v":1,"id":"i2""#)),
        ("an unknown member", plain.replacingOccurrences(#""v":1"#, #""v":1,"extra":{"a":1}"#)),
        ("a version written 1.0", plain.replacingOccurrences(#""v":1"#, #""v":1.0"#)),
        ("a version written 01", plain.replacingOccurrences(#""v":1"#, #""v":01"#)),
        ("version 2", plain.replacingOccurrences(#""v":1"#, #""v":2"#)),
        ("another type", plain.replacingOccurrences(#""type":"intent""#, #""type":"app_opened""#)),
        ("a 19-digit offset", plain.replacingOccurrences(#""offset":5"#, #""offset":9223372036854775807"#)),
        ("a partition beyond 32 bits", plain.replacingOccurrences(#""partition":0"#, #""partition":2147483648"#)),
        ("a negative zero", plain.replacingOccurrences(#""partition":0"#, #""partition":-0"#)),
        ("an offset as a string", plain.replacingOccurrences(#""offset":5"#, #""offset":"5""#)),
        ("a duplicate coordinate", plain.replacingOccurrences(#""offset":5"#, #""offset":5,"offset":6"#)),
        ("a non-ASCII id", plain.replacingOccurrences(#""id":"i1""#, #""id":"é""#)),
        ("a control character", plain.replacingOccurrences(#""id":"i1""#, "\"id\":\"i\u{1}\"")),
        ("a trailing comma", plain.replacingOccurrences(#""v":1}"#, #""v":1,}"#)),
        ("text after the record", plain + "x"),
        ("a time that does not parse", plain.replacingOccurrences(#""v":1"#, #""v":1,"expires_at":"tomorrow""#)),
        ("a time as a number", plain.replacingOccurrences(#""v":1"#, #""v":1,"expires_at":5"#)),
        ("no source", plain.replacingOccurrences(#""source":{"offset":5,"partition":0,"topic":"t"},"#, "")),
        ("no data", plain.replacingOccurrences(#""data":{"n":1,"names":["A","B"]},"#, "")),
        ("data that is not an object", plain.replacingOccurrences(#""data":{"n":1,"names":["A","B"]}"#, #""data":[1]"#)),
        ("data with a big integer", plain.replacingOccurrences(#""n":1"#, #""n":123456789012345678901"#)),
        ("data that is not JSON", plain.replacingOccurrences(#""n":1"#, #""n":tru"#)),
        ("an unterminated record", String(plain.dropLast())),
    ])
    func unusualIntentsAreLeftToTheTree(_ what: String, _ json: String) {
        let bytes = Array(json.utf8)
        #expect(Self.byteIntent(bytes) == nil, "\(what): read from the bytes")
        RecordCodecDifferentialTests.compare(bytes)
    }

    @Test("an intent over a size limit is left to the tree, which refuses it (JSONDecoder has no limits)", arguments: [
        ("an id one byte longer than any size limit allows unchecked", "id", plain.replacingOccurrences(
            #""id":"i1""#, "\"id\":\"\(String(repeating: "i", count: RecordLimits.shortestString + 1))\"")),
        ("an id far over its size limit", "id", plain.replacingOccurrences(#""id":"i1""#, "\"id\":\"\(String(repeating: "i", count: 200))\"")),
        ("data nested too deep", "nested deeper", plain.replacingOccurrences(
            #""data":{"n":1,"names":["A","B"]}"#,
            "\"data\":" + String(repeating: #"{"a":"#, count: 20) + "1" + String(repeating: "}", count: 20))),
    ])
    func oversizedIntentsAreLeftToTheTree(_ what: String, _ named: String, _ json: String) {
        let bytes = Array(json.utf8)
        #expect(Self.byteIntent(bytes) == nil, "\(what): read from the bytes")
        #expect(throws: RecordError.self, "\(what): not refused") { try RecordCodec.decode(bytes) }
        if case .failure(let error) = Result(catching: { () throws(RecordError) in try RecordCodec.decode(bytes) }) {
            #expect(error.message.contains(named), "\(what): \(error.message)")
        }
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        precondition(contains(target), "\(target) is not in the record")
        return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
