@testable import FleetModel
import PropertyBased
import Testing

@Suite("Timestamp and calendar arithmetic")
struct TimestampTests {
    @Test("RFC 3339 parses Z, offsets and fractions")
    func parsesRFC3339() throws {
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.millisecondsSinceEpoch == 0)
        #expect(Timestamp(rfc3339: "2026-11-21T05:47:09Z")?.millisecondsSinceEpoch == 1_795_240_029_000)
        #expect(Timestamp(rfc3339: "2026-11-21T05:47:09.5Z")?.millisecondsSinceEpoch == 1_795_240_029_500)
        #expect(Timestamp(rfc3339: "2026-11-21T05:47:09.123456Z")?.millisecondsSinceEpoch == 1_795_240_029_123)
        #expect(Timestamp(rfc3339: "2026-11-21T07:47:09+02:00")?.millisecondsSinceEpoch == 1_795_240_029_000)
        #expect(Timestamp(rfc3339: "2026-11-20T23:17:09-06:30")?.millisecondsSinceEpoch == 1_795_240_029_000)
    }

    @Test("RFC 3339 rejects malformed text", arguments: [
        "", "2026-11-21", "2026-11-21T05:47:09", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-21T24:00:00Z", "2026-11-21T05:47:09.Z", "2026-11-21T05:47:09+0200", "not a time at all!!",
    ])
    func rejectsMalformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test("formatting omits zero milliseconds")
    func formats() {
        #expect(Timestamp(millisecondsSinceEpoch: 0).rfc3339 == "1970-01-01T00:00:00Z")
        #expect(Timestamp(millisecondsSinceEpoch: 1_795_240_029_120).rfc3339 == "2026-11-21T05:47:09.120Z")
        #expect(Timestamp(millisecondsSinceEpoch: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
    }

    @Test("formatting straight into bytes writes what spelling it out with String(_:) writes, in every year")
    func fastFormattingAgrees() async throws {
        // Years about -10 700 to 14 600: the fast path's 0–9999 and the spelled-out ones around it.
        await propertyCheck(count: 3000, input: Gen.int64(in: -400_000_000_000_000...400_000_000_000_000)) { ms in
            let t = Timestamp(millisecondsSinceEpoch: ms)
            #expect(t.rfc3339 == t.rfc3339Spelled)
            let whole = Timestamp(millisecondsSinceEpoch: ms - ms % 1000)
            #expect(whole.rfc3339 == whole.rfc3339Spelled)
        }
        for text in ["0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "0001-02-03T04:05:06.007Z"] {
            let t = try #require(Timestamp(rfc3339: text))
            #expect(t.rfc3339 == text)
        }
        let tenThousand = Timestamp(millisecondsSinceEpoch: 253_402_300_800_000)  // 10000-01-01T00:00:00Z
        #expect(tenThousand.rfc3339 == "10000-01-01T00:00:00Z" && tenThousand.rfc3339 == tenThousand.rfc3339Spelled)
    }

    @Test("format then parse is the identity")
    func roundTrip() async {
        await propertyCheck(count: 2000, input: Gen.int64(in: -2_000_000_000_000...8_000_000_000_000)) { ms in
            let t = Timestamp(millisecondsSinceEpoch: ms)
            #expect(Timestamp(rfc3339: t.rfc3339) == t)
        }
    }

    @Test("civil dates convert to and from day numbers")
    func civilDates() async {
        #expect(CivilDate(year: 1970, month: 1, day: 1).daysSinceEpoch == 0)
        #expect(CivilDate(year: 2000, month: 3, day: 1).daysSinceEpoch == 11_017)
        #expect(CivilDate(year: 2026, month: 11, day: 21).isoWeekday == 6)  // a Saturday
        #expect(CivilDate(year: 2024, month: 2, day: 29).adding(days: 1) == CivilDate(year: 2024, month: 3, day: 1))
        await propertyCheck(count: 2000, input: Gen.int(in: -800_000...800_000)) { days in
            #expect(CivilDate(daysSinceEpoch: days).daysSinceEpoch == days)
        }
    }

    @Test("birthdays on 29 February fall on 28 February in other years (P-REM-1)")
    func leapBirthday() throws {
        let md = try #require(MonthDay(month: 2, day: 29))
        #expect(md.date(in: 2027) == CivilDate(year: 2027, month: 2, day: 28))
        #expect(md.date(in: 2028) == CivilDate(year: 2028, month: 2, day: 29))
        #expect(MonthDay(month: 2, day: 30) == nil)
    }
}
