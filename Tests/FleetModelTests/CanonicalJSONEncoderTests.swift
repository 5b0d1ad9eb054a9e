@testable import FleetModel
import FleetTestSupport
import Foundation
import PropertyBased
import Testing

// `CanonicalJSONEncoder` replaces `JSONEncoder` (sorted keys, unescaped slashes) for record and
// state bytes, which crash equivalence, replay and the golden files compare byte for byte. Every
// test here compares its output with `JSONEncoder`'s, the oracle
// (`CanonicalJSONEncoder.foundationEncode`).

/// Expects `CanonicalJSONEncoder` to give `JSONEncoder`'s bytes, or the same kind of failure.
func expectSameBytes<T: Encodable>(_ value: T, _ comment: @autoclosure () -> String = "", sourceLocation: SourceLocation = #_sourceLocation) {
    let new = Result { try CanonicalJSONEncoder.encode(value) }
    let old = Result { try CanonicalJSONEncoder.foundationEncode(value) }
    switch (new, old) {
    case (.success(let a), .success(let b)):
        #expect(a == b, "\(comment())\n new \(String(decoding: a, as: UTF8.self))\n old \(String(decoding: b, as: UTF8.self))", sourceLocation: sourceLocation)
    case (.failure(let a), .failure(let b)):
        #expect("\(a)" == "\(b)", "\(comment())", sourceLocation: sourceLocation)
    default:
        Issue.record("\(comment()) new \(new) vs old \(old)", sourceLocation: sourceLocation)
    }
}

/// Random records of every `FleetRecord` case, with awkward strings and free-form JSON.
enum RecordGen {
    static let zones = ["UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kathmandu", "Pacific/Chatham"].compactMap(Zone.init(identifier:))

    static func record(_ dice: inout Dice, kind: Int) -> FleetRecord {
        func s() -> String { RecordCodecDifferentialTests.randomString(&dice) }
        func maybe<T>(_ make: () -> T) -> T? { dice.chance(50) ? make() : nil }
        func int() -> Int { dice.chance(20) ? dice.pick([0, -1, .max, .min, 100]) : dice.below(200) - 50 }
        func object() -> JSONObject {
            RecordCodecDifferentialTests.randomJSON(&dice).objectValue ?? [s(): RecordCodecDifferentialTests.randomJSON(&dice)]
        }
        let at = Timestamp(millisecondsSinceEpoch: Int64(dice.below(4_000_000_000)) * 1000 + Int64(dice.below(1000)) - 1_000_000_000_000)
        let zone = dice.pick(zones)
        let id = s(), user = s()
        switch kind {
        case 0:
            return .scoreComputed(ScoreComputed(
                id: id, userId: user, batchId: s(), computedAt: at, score: int(),
                components: .init(quality: int(), position: int(), stability: int(), trust: int())))
        case 1:
            return .contactsSyncCompleted(ContactsSyncCompleted(
                id: id, userId: user, syncId: s(), completedAt: at, added: int(), updated: int(), removed: int(),
                autoMerged: int(), newDedupSuggestions: int(), unreviewedDedupSuggestions: int(),
                oldestUnreviewedDedupAt: maybe { at },
                enrichment: (0..<dice.below(4)).map { _ in .init(contactId: s(), name: s()) },
                conflicts: (0..<dice.below(3)).map { _ in .init(contactId: s(), name: s(), field: s()) }))
        case 2:
            return .reminderUpserted(ReminderUpserted(
                id: id, userId: user, reminderId: s(), kind: dice.pick(ReminderKind.allCases), contactId: s(), contactName: s(),
                timeZone: zone, birthday: maybe { MonthDay(month: 1 + dice.below(12), day: 1 + dice.below(28)) } ?? nil,
                fireAtLocal: maybe { LocalDateTime(date: CivilDate(year: 2020 + dice.below(10), month: 1 + dice.below(12), day: 1 + dice.below(28)), time: LocalTimeOfDay(hour: dice.below(24), minute: dice.below(60))) },
                recurrence: dice.pick(Recurrence.allCases), note: maybe { s() }))
        case 3: return .reminderCancelled(ReminderCancelled(id: id, userId: user, reminderId: s()))
        case 4: return .accessRequested(AccessRequested(id: id, userId: user, requestId: s(), requesterName: s(), field: s()))
        case 5: return .securityNewSignin(SecurityAlert(id: id, userId: user, detail: s()))
        case 6: return .securitySuspiciousActivity(SecurityAlert(id: id, userId: user, detail: s()))
        case 7: return .userSignedUp(UserSignedUp(id: id, userId: user, timeZone: zone))
        case 8: return .appOpened(AppOpened(id: id, userId: user, entrySource: dice.pick(EntrySource.allCases), notificationId: maybe { s() }))
        case 9: return .notificationOpened(NotificationInteraction(id: id, userId: user, notificationId: s(), category: s()))
        case 10: return .notificationDismissed(NotificationInteraction(id: id, userId: user, notificationId: s(), category: s()))
        case 11:
            return .settingsChanged(SettingsChanged(
                id: id, userId: user, timeZone: maybe { zone },
                quietHours: maybe { QuietHours(start: LocalTimeOfDay(hour: dice.below(24), minute: dice.below(60)), end: LocalTimeOfDay(hour: dice.below(24), minute: 0)) },
                pushEnabled: maybe { dice.chance(50) }, emailOptIn: maybe { dice.chance(50) }, premium: maybe { dice.chance(50) },
                disabledCategories: maybe { (0..<dice.below(3)).map { _ in s() } }))
        case 12:
            return .permissionChanged(PermissionChanged(
                id: id, userId: user, permission: dice.pick(PermissionKind.allCases), status: dice.pick(PermissionStatus.allCases)))
        case 13: return .userAction(UserAction(id: id, userId: user, action: s()))
        case 14: return .scoreViewed(ScoreViewed(id: id, userId: user, score: int()))
        case 15:
            return .intent(Intent(
                id: id, userId: user, notification: s(), category: s(), data: object(), expiresAt: maybe { at },
                source: SourceCoordinates(topic: s(), partition: Int32(truncatingIfNeeded: dice.next()), offset: Int64(truncatingIfNeeded: dice.next()))))
        case 16:
            return .sectionItem(SectionItem(id: id, userId: user, section: s(), itemId: s(), item: object(), expiresAt: maybe { at }))
        case 17: return .retentionEvent(RetentionEvent(id: id, userId: user, event: s(), properties: object()))
        case 18: return .tick(Tick(id: id))
        case 19:
            return .delivery(Delivery(
                id: id, userId: user, notificationId: s(), channel: dice.pick(DeliveryChannel.allCases), notification: s(),
                category: s(), title: s(), body: s(), deepLink: s(), mergedIntents: (0..<dice.below(4)).map { _ in s() }))
        case 20:
            return .decision(Decision(
                id: id, userId: user, intentId: s(), outcome: dice.pick(DecisionOutcome.allCases), reason: maybe { s() },
                notificationId: maybe { s() }, until: maybe { at }, rule: s()))
        default:
            return .decision(Decision(
                id: id, userId: user, kind: dice.pick(EngineNotificationKind.allCases), notificationId: s(),
                outcome: dice.pick(DecisionOutcome.allCases), reason: s(), until: maybe { at }, rule: s()))
        }
    }

    static let kinds = 22
}

@Suite("CanonicalJSONEncoder writes JSONEncoder's bytes")
struct CanonicalJSONEncoderTests {
    @Test("every FleetRecord case, random fields: RecordCodec.encode and CanonicalJSONEncoder give JSONEncoder's bytes")
    func recordsAgree() async {
        await propertyCheck(count: 2100, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let record = RecordGen.record(&dice, kind: seed % RecordGen.kinds)
            let expected = try? CanonicalJSONEncoder.foundationEncode(record)
            #expect(RecordCodec.encode(record) == expected, "\(record)")
            expectSameBytes(record, "\(record)")
        }
    }

    @Test("times at and beyond the ends of years 0–9999, with and without milliseconds, are written as JSONEncoder writes them")
    func timesAtTheEdgesAgree() {
        // The writer copies a time's bytes from the stack for years 0–9999 and spells the rest
        // out (`Timestamp.withRFC3339UTF8`, `rfc3339Spelled`).
        let edges: [Int64] = [
            -62_167_219_200_001, -62_167_219_200_000, -62_167_219_199_999, -1, 0, 1, 999, 1_000,
            253_402_300_799_000, 253_402_300_799_999, 253_402_300_800_000, 253_402_300_800_001,
        ]
        for milliseconds in edges {
            let at = Timestamp(millisecondsSinceEpoch: milliseconds)
            let records: [FleetRecord] = [
                .decision(Decision(id: "d", userId: "u", intentId: "i", outcome: .deferred, until: at, rule: "P-QUIET-1")),
                .sectionItem(SectionItem(id: "s", userId: "u", section: "home", itemId: "x", item: [:], expiresAt: at)),
            ]
            for record in records {
                #expect(RecordCodec.encode(record) == (try? CanonicalJSONEncoder.foundationEncode(record)), "\(at.rfc3339)")
            }
        }
    }

    @Test("one RecordCodec.Writer over a run of records writes each as a fresh RecordCodec.encode does")
    func writerReusesItsSession() async {
        // Runs of every case, with records that grow the session's buffer well past its first
        // capacity between small ones, and free-form objects (frames, entries, reordering)
        // between records written without them: nothing of one record may leak into the next.
        await propertyCheck(count: 300, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let writer = RecordCodec.Writer()
            for position in 0..<24 {
                var record = RecordGen.record(&dice, kind: dice.below(RecordGen.kinds))
                if dice.chance(15), case .sectionItem(var item) = RecordGen.record(&dice, kind: 16) {
                    item.item = JSONObject(uniqueKeysWithValues: (0..<dice.below(200)).map { ("k\($0)", JSONValue.string(String(repeating: "é\"", count: $0))) })
                    record = .sectionItem(item)
                }
                let fresh = RecordCodec.encode(record), reused = writer.encode(record)
                guard reused == fresh else {
                    Issue.record("record \(position) (\(record.type)): \(reused.count) bytes from the reused writer, \(fresh.count) fresh")
                    return
                }
            }
        }
    }

    @Test("the decode templates, decoded and encoded again, give JSONEncoder's bytes")
    func templatesAgree() throws {
        for template in RecordCodecDifferentialTests.templates {
            let record = try RecordCodec.decode(Array(template.utf8))
            #expect(RecordCodec.encode(record) == (try CanonicalJSONEncoder.foundationEncode(record)))
        }
    }

    @Test("random JSONValue trees with awkward strings, keys and numbers")
    func jsonValuesAgree() async {
        await propertyCheck(count: 1500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let value = Self.awkwardJSON(&dice)
            expectSameBytes(value, "\(value)")
            // Also as a member of a synthesised Codable type, through the generic containers.
            expectSameBytes(Wrapper(value: value, list: [value, .null], map: ["k": value]), "\(value)")
        }
    }

    @Test("long strings, with an escape or a non-ASCII byte at any place of an eight-byte word, are written as JSONEncoder writes them")
    func longStringsAgree() async {
        await propertyCheck(count: 1500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            // Mostly plain runs, so whole words are skipped, with a piece to escape (or a
            // multi-byte one) landing anywhere in them; sometimes nothing to escape at all.
            let plain = "abcdefghijklmnopqrstuvwxyz0123456789"
            var text = ""
            for _ in 0..<dice.below(6) {
                text += String(plain.prefix(dice.below(plain.count + 1)))
                if dice.chance(70) { text += dice.pick(Self.awkwardPieces) }
            }
            expectSameBytes(text, text.debugDescription)
            expectSameBytes([text: JSONValue.string(text)], text.debugDescription)
        }
    }

    @Test("object keys sharing prefixes of every length, with NUL, control and non-ASCII bytes, are written in the order of their UTF-8 bytes")
    func objectKeysSortByBytes() async {
        // Keys from a long common stem cut at every length around the eight-byte prefix, with
        // pieces after it that differ at, before and after the eighth byte.
        let stem = "abcdefghijkl"
        let tails = ["", "\u{0}", "\u{0}\u{0}", "\u{1}", "a", "b", "é", "\u{7f}", "\u{80}", "日", "\"", "z"]
        await propertyCheck(count: 1500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            var members: JSONObject = [:]
            for _ in 0..<(2 + dice.below(11)) {
                let key = String(stem.prefix(dice.below(stem.count + 1))) + dice.pick(tails) + (dice.chance(30) ? dice.pick(tails) : "")
                members[key] = .int(Int64(dice.below(100)))
            }
            // The order the writer relies on: unequal prefixes are in the keys' byte order.
            let keys = Array(members.keys)
            for a in keys {
                for b in keys where a != b {
                    let (pa, pb) = (JSONObject.sortPrefix(a), JSONObject.sortPrefix(b))
                    if pa != pb { #expect((pa < pb) == Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)), "\(a.debugDescription) \(b.debugDescription)") }
                }
            }
            // And the bytes written: the members in that order, as JSONEncoder writes them.
            let sorted = keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            let written = (try? CanonicalJSONEncoder.encode(JSONValue.object(members))) ?? []
            let expected = "{" + sorted.map { key in
                String(decoding: (try? CanonicalJSONEncoder.encode(key)) ?? [], as: UTF8.self) + ":" + String(decoding: (try? CanonicalJSONEncoder.encode(members[key])) ?? [], as: UTF8.self)
            }.joined(separator: ",") + "}"
            #expect(String(decoding: written, as: UTF8.self) == expected, "\(sorted.map(\.debugDescription))")
            expectSameBytes(members, "\(sorted.map(\.debugDescription))")
        }
    }

    @Test("needsEscape: every byte value, alone or paired with another, at every place in a word")
    func needsEscapeIsExact() {
        func escaped(_ byte: UInt8) -> Bool { byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") }
        // Fillers: plain ASCII, the bytes next to the ones escaped, and bytes with the high bit set.
        let mismatches = ByteWordCheck.mismatches(
            fillers: [0x61, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xFF],
            pairs: { first, second in second == 0x61 || second < 0x24 || second == 0x5C || second > 0xFD || first < 0x24 },
            wordHas: CanonicalJSONSession.needsEscape, byteHas: escaped)
        #expect(mismatches == 0)
    }

    static let awkwardPieces = [
        "a", "Z", "é", "e\u{301}", "😀", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{a}", "\u{c}", "\u{d}", "\u{1f}", "\"", "\\", "/",
        "\u{7f}", "\u{80}", "\u{2028}", "\u{2029}", "\u{feff}", "日本", " ", "_", "~", "0", "A",
    ]

    static func awkwardString(_ dice: inout Dice) -> String {
        (0..<dice.below(5)).map { _ in dice.pick(awkwardPieces) }.joined()
    }

    static let edgeDoubles: [Double] = [
        0, -0.0, 0.1, 0.2, 0.30000000000000004, 1, -1, 2.5, 100, 1e15, 1e16, 1e17, 123456789012345680, 9007199254740992,
        1e21, 1e22, -1e21, 1e-4, 1e-5, 1.5e-7, .leastNonzeroMagnitude, 2.2250738585072014e-308, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNormalMagnitude, .ulpOfOne, 4294967296, 9.223372036854776e18, 1.8446744073709552e19, 3.141592653589793, 1 / 3,
    ]

    static func awkwardJSON(_ dice: inout Dice, depth: Int = 0) -> JSONValue {
        switch dice.below(depth > 3 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(dice.chance(50))
        case 2:
            let edge: [Int64] = [0, -1, 1, .max, .min, 1 << 53, -(1 << 53) - 1]
            return .int(dice.chance(30) ? dice.pick(edge) : Int64(truncatingIfNeeded: dice.next()) >> dice.below(64))
        case 3:
            if dice.chance(50) { return .double(dice.pick(edgeDoubles)) }
            if dice.chance(30) { return .double(Double(Int64(truncatingIfNeeded: dice.next()) >> dice.below(64))) }
            let bits = dice.next() & 0x7FEF_FFFF_FFFF_FFFF
            return .double(Double(bitPattern: bits) * (dice.chance(50) ? 1 : -1))
        case 4: return .string(awkwardString(&dice))
        case 5: return .array((0..<dice.below(4)).map { _ in awkwardJSON(&dice, depth: depth + 1) })
        default:
            var object: JSONObject = [:]
            for _ in 0..<dice.below(7) { object[awkwardString(&dice)] = awkwardJSON(&dice, depth: depth + 1) }
            return .object(object)
        }
    }

    struct Wrapper: Encodable {
        var value: JSONValue
        var list: [JSONValue]
        var map: [String: JSONValue]
    }

    @Test("doubles and floats are formatted as JSONEncoder formats them", arguments: edgeDoubles)
    func doubles(_ value: Double) {
        expectSameBytes(value)
        expectSameBytes(-value)
        expectSameBytes([value])
        expectSameBytes(["d": value])
        expectSameBytes(JSONValue.double(value))
        expectSameBytes(Float(value))
        expectSameBytes(Numbers(double: value))
    }

    @Test("random doubles (every exponent) and floats format as in JSONEncoder")
    func randomDoubles() async {
        await propertyCheck(count: 2000, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var dice = Dice(seed: seed)
            let double = Double(bitPattern: dice.next() & 0x7FEF_FFFF_FFFF_FFFF)
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: dice.next()) & 0x7F7F_FFFF)
            let integral = Double(Int64(truncatingIfNeeded: dice.next()) >> dice.below(64))
            expectSameBytes([double, -double, integral, Double(float)], "\(double) \(integral)")
            expectSameBytes([float, -float], "\(float)")
        }
    }

    struct Numbers: Encodable {
        var double: Double
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CanonicalJSONPathKey.self)
            try c.encode(double, forKey: .init(stringValue: "d"))
            try c.encode(Float(double), forKey: .init(stringValue: "f"))
            try c.encode(Int8.min, forKey: .init(stringValue: "i8"))
            try c.encode(Int16.min, forKey: .init(stringValue: "i16"))
            try c.encode(Int32.min, forKey: .init(stringValue: "i32"))
            try c.encode(Int64.min, forKey: .init(stringValue: "i64"))
            try c.encode(Int.max, forKey: .init(stringValue: "i"))
            try c.encode(UInt8.max, forKey: .init(stringValue: "u8"))
            try c.encode(UInt16.max, forKey: .init(stringValue: "u16"))
            try c.encode(UInt32.max, forKey: .init(stringValue: "u32"))
            try c.encode(UInt64.max, forKey: .init(stringValue: "u64"))
            try c.encode(UInt.max, forKey: .init(stringValue: "u"))
            try c.encode(Int128.min, forKey: .init(stringValue: "i128"))
            try c.encode(UInt128.max, forKey: .init(stringValue: "u128"))
            try c.encode(true, forKey: .init(stringValue: "t"))
            try c.encodeNil(forKey: .init(stringValue: "n"))
            var u = c.nestedUnkeyedContainer(forKey: .init(stringValue: "list"))
            try u.encode(double); try u.encode(Float(double)); try u.encode(Int8(-8)); try u.encode(UInt16(16))
            try u.encode(Int128(-5)); try u.encode(UInt128(5)); try u.encode(false); try u.encodeNil()
        }
    }

    @Test("NaN and infinity fail as in JSONEncoder", arguments: [Double.nan, .infinity, -.infinity])
    func nonConforming(_ value: Double) {
        #expect(throws: EncodingError.self) { try CanonicalJSONEncoder.encode(["x": value]) }
        expectSameBytes(["x": value])
        expectSameBytes([Float(value)])
    }
}
