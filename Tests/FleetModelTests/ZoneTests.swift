import FleetModel
import PropertyBased
import Testing

/// P-TIME-1: local days, 09:00 and 22:00 follow the user's zone through DST changes.
@Suite("IANA zones and local time")
struct ZoneTests {
    func at(_ text: String) throws -> Timestamp { try #require(Timestamp(rfc3339: text)) }
    func local(_ text: String) throws -> LocalDateTime { try #require(LocalDateTime(Substring(text))) }

    @Test("unknown zones are rejected")
    func unknownZone() {
        #expect(Zone(identifier: "Mars/Olympus_Mons") == nil)
        #expect(Zone(identifier: "Europe/Berlin") != nil)
    }

    @Test("local wall time of an instant, with 30- and 45-minute offsets")
    func localTimes() throws {
        let kolkata = try #require(Zone(identifier: "Asia/Kolkata"))
        #expect(kolkata.localDateTime(at: try at("2026-01-15T18:45:00Z")) == (try local("2026-01-16T00:15")))
        let kathmandu = try #require(Zone(identifier: "Asia/Kathmandu"))
        #expect(kathmandu.localDateTime(at: try at("2026-01-15T18:15:00Z")) == (try local("2026-01-16T00:00")))
        let chatham = try #require(Zone(identifier: "Pacific/Chatham"))
        // +13:45 in (southern) summer.
        #expect(chatham.offsetSeconds(at: try at("2026-01-15T00:00:00Z")) == 13 * 3600 + 45 * 60)
    }

    @Test("spring forward: a wall time in the gap resolves to the first valid minute after it")
    func springForwardGap() throws {
        let ny = try #require(Zone(identifier: "America/New_York"))
        // 2026-03-08 02:00 → 03:00 EDT. 02:30 does not exist.
        #expect(ny.instant(for: try local("2026-03-08T02:30")) == (try at("2026-03-08T07:00:00Z")))
        #expect(ny.localDateTime(at: try at("2026-03-08T07:00:00Z")) == (try local("2026-03-08T03:00")))
        #expect(ny.instant(for: try local("2026-03-08T01:59")) == (try at("2026-03-08T06:59:00Z")))
        #expect(ny.instant(for: try local("2026-03-08T03:00")) == (try at("2026-03-08T07:00:00Z")))
        // The day is 23 hours long.
        let day = CivilDate(year: 2026, month: 3, day: 8)
        #expect(ny.startOfDay(day.adding(days: 1)) - ny.startOfDay(day) == .hours(23))
    }

    @Test("fall back: a wall time that occurs twice resolves to its first occurrence")
    func fallBackOverlap() throws {
        let ny = try #require(Zone(identifier: "America/New_York"))
        // 2026-11-01 02:00 EDT → 01:00 EST: 01:30 happens at 05:30Z and 06:30Z.
        #expect(ny.instant(for: try local("2026-11-01T01:30")) == (try at("2026-11-01T05:30:00Z")))
        let day = CivilDate(year: 2026, month: 11, day: 1)
        #expect(ny.startOfDay(day.adding(days: 1)) - ny.startOfDay(day) == .hours(25))
    }

    @Test("a 22:00 start falling in a gap (zones that change at 22:00 or midnight)")
    func midnightGap() throws {
        // Santiago springs forward at 24:00 → 01:00 on the first Sunday of September.
        let santiago = try #require(Zone(identifier: "America/Santiago"))
        let start = santiago.startOfDay(CivilDate(year: 2026, month: 9, day: 6))
        #expect(santiago.localDateTime(at: start) == (try local("2026-09-06T01:00")))
    }

    @Test("instant(for:) inverts localDateTime(at:) for every existing wall time")
    func inverse() async {
        let zones = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "UTC",
                     "America/Santiago", "Pacific/Chatham", "Europe/Berlin"].compactMap { Zone(identifier: $0) }
        await propertyCheck(count: 1500, input: Gen.int(in: 0..<zones.count), Gen.int64(in: 1_500_000_000...2_100_000_000)) { z, seconds in
            let zone = zones[z]
            let instant = Timestamp(secondsSinceEpoch: seconds / 60 * 60)
            let wall = zone.localDateTime(at: instant)
            let back = zone.instant(for: wall)
            // Same wall time, and the earliest instant showing it.
            #expect(zone.localDateTime(at: back) == wall)
            #expect(back <= instant)
        }
    }
}
