@testable import FleetModel
import FleetTestSupport
import PropertyBased
import Testing

// `RecordCodec.decode` reads plainly written intents and app events straight from their bytes
// (`PlainRecordDecoding`) and everything else through the tree. The byte path must take the
// records the fleet writes (else it is dead weight) and give exactly what the tree and
// `JSONDecoder` give; anything unusual must be left to the tree, which alone reports errors.
// `RecordCodecDifferentialTests` checks random, mutated and malformed intents end to end.
struct PlainRecordDecodingTests {
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

    static func byteRecord(_ bytes: [UInt8]) -> FleetRecord? {
        bytes.withUnsafeBufferPointer(PlainRecordDecoding.record)
    }

    static func byteIntent(_ bytes: [UInt8]) -> Intent? {
        guard case .intent(let intent)? = byteRecord(bytes) else { return nil }
        return intent
    }

    /// An app event as the app's ingest writes them: ASCII ids, names and zones.
    static func plainEvent(_ dice: inout Dice) -> FleetRecord {
        let id = "e\(dice.next() % 1_000_000)", userId = "u\(dice.below(100_000))"
        switch dice.below(4) {
        case 0:
            return .appOpened(AppOpened(
                id: id, userId: userId, entrySource: dice.pick(EntrySource.allCases),
                notificationId: dice.chance(50) ? "n\(dice.below(1000))" : nil))
        case 1:
            let zone = Zone(identifier: dice.pick(["UTC", "Europe/Berlin", "Asia/Kathmandu", "America/New_York"]))
            return .userSignedUp(UserSignedUp(id: id, userId: userId, timeZone: zone ?? .utc))
        case 2:
            return .notificationOpened(NotificationInteraction(id: id, userId: userId, notificationId: "n1", category: "SCORE"))
        default:
            return .notificationDismissed(NotificationInteraction(id: id, userId: userId, notificationId: "n2", category: "TIPS"))
        }
    }

    /// The record with insignificant whitespace around it and after its colons and commas.
    static func spaced(_ bytes: [UInt8], _ dice: inout Dice) -> [UInt8] {
        Array(" \n".utf8) + RecordCodecDifferentialTests.spacedOut(bytes, &dice) + Array("\t ".utf8)
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

    @Test("app events as the app writes them, also spaced out, are read from the bytes, as JSONDecoder reads them")
    func plainEventsTakeTheBytePath() async {
        await propertyCheck(count: 400, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let bytes = RecordCodec.encode(Self.plainEvent(&dice))
            for variant in [bytes, Self.spaced(bytes, &dice)] {
                guard case .success(let expected) = FoundationRecordDecoding.decode(variant) else {
                    Issue.record("JSONDecoder does not read \(String(decoding: variant, as: UTF8.self))")
                    continue
                }
                #expect(Self.byteRecord(variant) == expected, "not read from the bytes: \(String(decoding: variant, as: UTF8.self))")
                #expect((try? RecordCodec.decode(variant)) == expected)
            }
        }
    }

    static let opened = #"{"entry_source":"notification","id":"e1","notification_id":"n1","type":"app.opened","user_id":"u1","v":1}"#
    static let signedUp = #"{"id":"e2","time_zone":"Asia/Kolkata","type":"user.signed_up","user_id":"u1","v":1}"#
    static let dismissed = #"{"category":"SCORE","id":"e3","notification_id":"n1","type":"notification.dismissed","user_id":"u1","v":1}"#

    @Test("the plain events the variants below start from are read from the bytes")
    func plainEventsAreReadFromTheBytes() throws {
        #expect(Self.byteRecord(Array(Self.opened.utf8)) == .appOpened(AppOpened(id: "e1", userId: "u1", entrySource: .notification, notificationId: "n1")))
        #expect(Self.byteRecord(Array(Self.opened.replacingOccurrences(#""n1""#, "null").utf8))
            == .appOpened(AppOpened(id: "e1", userId: "u1", entrySource: .notification)))
        let kolkata = try #require(Zone(identifier: "Asia/Kolkata"))
        #expect(Self.byteRecord(Array(Self.signedUp.utf8)) == .userSignedUp(UserSignedUp(id: "e2", userId: "u1", timeZone: kolkata)))
        #expect(Self.byteRecord(Array(Self.dismissed.utf8))
            == .notificationDismissed(NotificationInteraction(id: "e3", userId: "u1", notificationId: "n1", category: "SCORE")))
    }

    @Test("anything unusual about an app event is left to the tree, which decodes it as JSONDecoder does", arguments: [
        ("an entry source the app does not have", opened.replacingOccurrences(#""notification","id""#, #""push","id""#)),
        ("a notification id that is a number", opened.replacingOccurrences(#""n1""#, "7")),
        ("a member another type has", opened.replacingOccurrences(#""v":1"#, #""v":1,"time_zone":"UTC""#)),
        ("a boolean member", opened.replacingOccurrences(#""v":1"#, #""v":1,"premium":true"#)),
        ("no entry source", opened.replacingOccurrences(#""entry_source":"notification","#, "")),
        ("a zone that is not a zone", signedUp.replacingOccurrences("Asia/Kolkata", "Mars/Base")),
        ("a null zone", signedUp.replacingOccurrences(#""Asia/Kolkata""#, "null")),
        ("no zone", signedUp.replacingOccurrences(#""time_zone":"Asia/Kolkata","#, "")),
        ("a null notification id where one is required", dismissed.replacingOccurrences(#""n1""#, "null")),
        ("an empty notification id", dismissed.replacingOccurrences(#""n1""#, #""""#)),
        ("no category", dismissed.replacingOccurrences(#""category":"SCORE","#, "")),
        ("a number too long for 64 bits", opened.replacingOccurrences(#""n1""#, "123456789012345678901234567890")),
        ("a version too long for 64 bits", opened.replacingOccurrences(#""v":1"#, #""v":100000000000000000000000001"#)),
        ("a type read through the tree", #"{"action":"contact.edited","id":"e7","type":"user.action","user_id":"u1","v":1}"#),
        ("no user id", signedUp.replacingOccurrences(#","user_id":"u1""#, "")),
        ("an empty user id", dismissed.replacingOccurrences(#""u1""#, #""""#)),
    ])
    func unusualEventsAreLeftToTheTree(_ what: String, _ json: String) {
        let bytes = Array(json.utf8)
        if what.hasPrefix("an empty") {
            // Plain, so read here; refused afterwards by the same checks as on the tree path.
            #expect(Self.byteRecord(bytes) != nil, "\(what): not read from the bytes")
        } else {
            #expect(Self.byteRecord(bytes) == nil, "\(what): read from the bytes")
        }
        RecordCodecDifferentialTests.compare(bytes)
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
        // Inside a long string, where the bytes are taken eight at a time.
        ("an escape in a long id", plain.replacingOccurrences(#""id":"i1""#, #""id":"abcdefghijklmnop\u0031qrstuvw""#)),
        ("a non-ASCII byte in a long id", plain.replacingOccurrences(#""id":"i1""#, #""id":"abcdefghijklmnopéqrstuvw""#)),
        ("a DEL in a long id", plain.replacingOccurrences(#""id":"i1""#, "\"id\":\"abcdefghijklmnop\u{7f}qrstuvw\"")),
        ("a control character in a long id", plain.replacingOccurrences(#""id":"i1""#, "\"id\":\"abcdefghijklmnop\u{1}qrstuvw\"")),
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

extension PlainRecordDecodingTests {
    static func plainData(_ json: String) -> JSONObject? {
        Array(json.utf8).withUnsafeBufferPointer(PlainRecordDecoding.plainFreeForm)
    }

    /// `json` as `data` of the plain intent.
    static func intent(withData json: String) -> [UInt8] {
        Array(plain.replacingOccurrences(#""data":{"n":1,"names":["A","B"]}"#, #""data":"# + json).utf8)
    }

    @Test("plain free-form data is read from the bytes, as the tree reads it", arguments: [
        #"{}"#,
        #"{"n":1}"#,
        #"{ "a" : -12 , "b":[ ] ,"c":{ } }"#,
        #"{"t":true,"f":false,"z":null,"s":"","l":[1,"x",true,null,-3]}"#,
        #"{"contact":{"name":"Alice","ids":[1,2,3],"inner":{"deeper":{"deepest":{"k":"v"}}}}}"#,
        #"{"big":999999999999999999,"small":-999999999999999999,"zero":0}"#,
        "{\n\t\"k\"\r:\n\"v\"\t}",
    ])
    func plainDataIsReadFromTheBytes(_ json: String) throws {
        let data = try #require(Self.plainData(json), "not read from the bytes")
        let tree = try JSONValue.object(node: JSONReader.read(Array(json.utf8), dialect: .foundationCompatible), path: .root)
        #expect(data == tree)
        let record = Self.intent(withData: json)
        #expect(Self.byteIntent(record)?.data == data)
        RecordCodecDifferentialTests.compare(record)
    }

    @Test("free-form data the bytes cannot settle is left to the tree, which reads it as JSONDecoder does", arguments: [
        ("a repeated name", #"{"a":1,"a":2}"#),
        ("an escape", #"{"a":"x\u0041"}"#),
        ("an escaped name", #"{"\u0061":1}"#),
        ("a non-ASCII string", #"{"a":"é"}"#),
        ("a fraction", #"{"a":1.5}"#),
        ("an integral fraction", #"{"a":2.0}"#),
        ("an exponent", #"{"a":1e3}"#),
        ("a 19-digit integer", #"{"a":1234567890123456789}"#),
        ("a negative zero", #"{"a":-0}"#),
        ("a leading zero", #"{"a":01}"#),
        ("a list in a list", #"{"a":[[1]]}"#),
        ("an object in a list", #"{"a":[{"b":1}]}"#),
        ("nesting past the plain depth", #"{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}"#),
        ("a literal cut short", #"{"a":tru}"#),
        ("a trailing comma", #"{"a":1,}"#),
        ("a missing value", #"{"a":}"#),
    ])
    func unusualDataIsLeftToTheTree(_ what: String, _ json: String) {
        #expect(Self.plainData(json) == nil, "\(what): read from the bytes")
        RecordCodecDifferentialTests.compare(Self.intent(withData: json))
    }

    @Test("isPlainWord: every byte value, alone or paired with another, at every place in a word")
    func isPlainWordIsExact() {
        func plain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") }
        // Fillers: plain ASCII, the bytes next to the ones refused, and bytes with the high bit set.
        let mismatches = ByteWordCheck.mismatches(
            fillers: [0x61, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7E, 0x7F, 0x80, 0xFF],
            pairs: { first, second in second == 0x61 || second < 0x24 || second == 0x5C || second > 0x7D || first < 0x24 },
            wordHas: { !PlainRecordDecoding.isPlainWord($0) }, byteHas: { !plain($0) })
        #expect(mismatches == 0)
    }

    @Test("firstStop: the first byte not plain, for every byte value alone or paired with another, at every place in a word")
    func firstStopIsExact() {
        func plain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") }
        let isPlain = (0...255).map { plain(UInt8($0)) }
        var mismatches = 0
        for filler: UInt8 in [0x61, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7E, 0x7F, 0x80, 0xFF] {
            for first in UInt8.min...UInt8.max {
                for second in UInt8.min...UInt8.max
                where second == 0x61 || second < 0x24 || second == 0x5C || second > 0x7D || first < 0x24 {
                    for a in 0..<8 {
                        for b in 0..<8 where b != a {
                            // Byte i at bits 8i: memory order once read as little-endian.
                            var word = UInt64(filler) &* 0x0101_0101_0101_0101
                            word = word & ~(0xFF << (8 * a)) | UInt64(first) << (8 * a)
                            word = word & ~(0xFF << (8 * b)) | UInt64(second) << (8 * b)
                            var expected: Int?
                            for place in 0..<8 where !isPlain[Int(word >> (8 * place) & 0xFF)] {
                                expected = place
                                break
                            }
                            if PlainRecordDecoding.firstStop(in: UInt64(littleEndian: word)) != expected { mismatches += 1 }
                        }
                    }
                }
            }
        }
        #expect(mismatches == 0)
    }

    @Test("data at a size limit's edge is read from the bytes; one past it is left to the tree, which refuses what it must")
    func dataAtTheLimitsEdges() {
        func members(_ count: Int) -> String {
            "{" + (0..<count).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}"
        }
        func list(_ count: Int) -> String {
            "{\"l\":[" + (0..<count).map(String.init).joined(separator: ",") + "]}"
        }
        func text(_ count: Int) -> String { "{\"s\":\"" + String(repeating: "x", count: count) + "\"}" }
        for (what, atEdge, pastIt) in [
            ("members", members(RecordLimits.freeFormMembers), members(RecordLimits.freeFormMembers + 1)),
            ("list elements", list(RecordLimits.shortestList), list(RecordLimits.shortestList + 1)),
            ("string bytes", text(RecordLimits.shortestString), text(RecordLimits.shortestString + 1)),
        ] {
            #expect(Self.plainData(atEdge) != nil, "\(what): the edge is not read from the bytes")
            RecordCodecDifferentialTests.compare(Self.intent(withData: atEdge))
            #expect(Self.plainData(pastIt) == nil, "\(what): past the edge read from the bytes")
        }
        // Past the member limit the tree refuses the intent; JSONDecoder, which has no limits, would not.
        #expect(throws: RecordError.self) { try RecordCodec.decode(Self.intent(withData: members(RecordLimits.freeFormMembers + 1))) }
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        precondition(contains(target), "\(target) is not in the record")
        return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
