import FleetModel
import FleetTestSupport
import Foundation
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

    /// The offset cache (one table per zone, shared by every thread, its last stretch read
    /// without a lock) never changes a result: any second, in any order, from several tasks at
    /// once, gives the tz database's offset. Half the seconds are drawn across two centuries,
    /// half within two minutes of one of the zone's transitions, where a stretch ends (so
    /// lookups keep leaving the stretch the last one found). Amsterdam and Monrovia had offsets
    /// in seconds, which the lock-free word cannot hold.
    @Test("offsets agree with the tz database at any second, in any order, from several tasks at once")
    func offsetsAgreeWithTheDatabase() async throws {
        let names = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "America/Santiago",
                     "Pacific/Chatham", "Europe/Amsterdam", "Africa/Monrovia", "Europe/Berlin"]
        let zones = try names.map { try #require(Zone(identifier: $0)) }
        // Each zone's transitions from 1930 to 2040, as the database reports them.
        let transitions: [[Int64]] = names.map { name in
            let timeZone = TimeZone(identifier: name)!
            var found: [Int64] = []
            var date = Date(timeIntervalSince1970: -1_262_304_000)
            while let next = timeZone.nextDaylightSavingTimeTransition(after: date), next.timeIntervalSince1970 < 2_208_988_800 {
                found.append(Int64(next.timeIntervalSince1970.rounded(.down)))
                date = next
            }
            return found
        }
        #expect(transitions.filter { $0.count > 100 }.count >= 5)
        let mismatches = await withTaskGroup(of: [String].self) { group in
            for task in 0..<6 {
                group.addTask {
                    var rng = SplitMix64(seed: UInt64(task))
                    var wrong: [String] = []
                    for _ in 0..<4_000 {
                        let z = rng.int(names.count)
                        let second: Int64
                        if rng.int(2) == 0 || transitions[z].isEmpty {
                            second = Int64(rng.int(0...6_000_000)) * 1_000 - 2_500_000_000 + Int64(rng.int(0...999))
                        } else {
                            second = transitions[z][rng.int(transitions[z].count)] + Int64(rng.int(-120...120))
                        }
                        let expected = TimeZone(identifier: names[z])!.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(second)))
                        let offset = zones[z].offsetSeconds(at: Timestamp(secondsSinceEpoch: second))
                        if offset != Int64(expected) { wrong.append("\(names[z]) at \(second): \(offset), not \(expected)") }
                    }
                    return wrong
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) wrong, e.g. \(mismatches.prefix(5))")
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
