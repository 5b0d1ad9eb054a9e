import FleetModel
import Foundation
import PropertyBased
import Testing
import UpstreamProcessors

/// Zones with DST in either hemisphere, 30- and 45-minute offsets or DST, transitions at
/// midnight, and none at all.
let propertyZones = [
    "America/New_York", "Europe/London", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe",
    "America/Santiago", "Pacific/Chatham", "Asia/Kolkata", "America/St_Johns", "America/Havana", "Asia/Beirut",
    "Africa/Cairo", "UTC",
]

/// One of `values`, uniformly (`Gen.element(of:)` yields optionals).
func oneOf<T: Sendable>(_ values: [T]) -> Generator<T, some SendableSequenceType> {
    Gen.int(in: 0...(values.count - 1)).map { values[$0] }
}

/// The occurrences of a follow-up, computed independently of `ReminderSchedule`.
private func expectedOccurrences(first: LocalDateTime, recurrence: Recurrence, until lastDate: CivilDate) -> [LocalDateTime] {
    var result: [LocalDateTime] = []
    switch recurrence {
    case .none:
        result = [first]
    case .weekly:
        var date = first.date
        while date <= lastDate {
            result.append(LocalDateTime(date: date, time: first.time))
            date = date.adding(days: 7)
        }
    case .monthly:
        var year = first.date.year
        var month = first.date.month
        while true {
            let day = min(first.date.day, CivilDate.daysInMonth(year: year, month: month))
            let date = CivilDate(year: year, month: month, day: day)
            if date > lastDate { break }
            result.append(LocalDateTime(date: date, time: first.time))
            month += 1
            if month == 13 { month = 1; year += 1 }
        }
    }
    return result
}

/// Whether `instant` shows the asked-for local time, or — when that time does not exist (DST
/// gap) — is the first valid minute after it.
private func isAskedLocalTime(_ instant: Timestamp, _ asked: LocalDateTime, in zone: Zone) -> Bool {
    let shown = zone.localDateTime(at: instant)
    if shown == asked { return true }
    let minuteBefore = zone.localDateTime(at: instant - .minutes(1))
    return shown > asked && minuteBefore < asked
}

@Suite("Reminder properties")
struct ReminderPropertyTests {
    @Test("P-REM-2 property: a follow-up fires exactly once per occurrence, at the local time asked for, across zones, years and DST")
    func followupsFireOncePerOccurrence() async {
        let dates = Gen.int(in: CivilDate(year: 2020, month: 1, day: 1).daysSinceEpoch...CivilDate(year: 2031, month: 12, day: 31).daysSinceEpoch)
        let times = zip(Gen.int(in: 0...23), oneOf([0, 1, 15, 30, 45, 59]))
        await propertyCheck(
            count: 150, input: oneOf(propertyZones), dates, times, Gen<Recurrence>.case, Gen.int(in: 1...2000)
        ) { zoneId, day, time, recurrence, leadHours in
            let zone = zone(zoneId)
            let first = LocalDateTime(date: CivilDate(daysSinceEpoch: day), time: LocalTimeOfDay(hour: time.0, minute: time.1))
            let upsertAt = zone.instant(for: first) - .hours(Int64(leadHours))
            let horizon = upsertAt + .days(400)
            var h = Harness(ReminderProcessor(), topic: Topics.reminderInbox)
            try h.process(followup("f", first.description, zone: zoneId, recurrence: recurrence), at: upsertAt)
            h.advance(to: horizon)

            let expected = expectedOccurrences(first: first, recurrence: recurrence, until: zone.localDate(at: horizon).adding(days: 1))
                .filter { zone.instant(for: $0) <= horizon }
            let firings = h.outputs.compactMap { output in output.intent.map { (output.timestamp, $0.data["scheduled_local"]?.stringValue ?? "") } }
            #expect(firings.map(\.1) == expected.map(\.description), "\(zoneId) \(first) \(recurrence)")
            #expect(firings.map(\.0) == expected.map { zone.instant(for: $0) })
            for (instant, local) in firings {
                guard let asked = LocalDateTime(Substring(local)) else {
                    Issue.record("bad scheduled_local \(local)")
                    continue
                }
                #expect(isAskedLocalTime(instant, asked, in: zone), "\(zoneId): \(local) fired at \(instant)")
            }
        }
    }

    @Test("P-REM-1 property: a birthday fires once a year at 09:00 local on its day (29 Feb → 28 Feb), expiring at local midnight")
    func birthdaysFireYearly() async {
        let monthDays = zip(Gen.int(in: 1...12), Gen.int(in: 1...29)).compactMap { MonthDay(month: $0.0, day: $0.1) }
        let starts = Gen.int(in: 1_577_836_800...1_893_456_000)  // 2020 … 2030
        await propertyCheck(count: 150, input: oneOf(propertyZones), monthDays, starts) { zoneId, monthDay, start in
            let zone = zone(zoneId)
            let upsertAt = Timestamp(secondsSinceEpoch: Int64(start))
            let horizon = upsertAt + .days(3 * 366)
            var h = Harness(ReminderProcessor(), topic: Topics.reminderInbox)
            try h.process(birthday("b", monthDay.description, zone: zoneId), at: upsertAt)
            h.advance(to: horizon)

            var expected: [(Timestamp, Timestamp)] = []  // (fired at, expires at)
            let firstYear = zone.localDate(at: upsertAt).year
            for year in firstYear...(firstYear + 4) {
                let date = monthDay.date(in: year)
                let nine = zone.instant(for: LocalDateTime(date: date, time: LocalTimeOfDay(hour: 9, minute: 0)))
                let midnight = zone.startOfDay(date.adding(days: 1))
                guard midnight > upsertAt, nine <= horizon else { continue }
                expected.append((max(nine, upsertAt), midnight))
            }
            let firings = h.outputs.compactMap { output in output.intent.map { (output.timestamp, $0.expiresAt) } }
            #expect(firings.map(\.0) == expected.map(\.0), "\(zoneId) \(monthDay) from \(upsertAt)")
            #expect(firings.map(\.1) == expected.map(\.1))
            for (fired, _) in firings where fired > upsertAt {
                let local = zone.localDateTime(at: fired)
                #expect(local.time == LocalTimeOfDay(hour: 9, minute: 0) || isAskedLocalTime(fired, LocalDateTime(date: local.date, time: .init(hour: 9, minute: 0)), in: zone))
                #expect(local.date == monthDay.date(in: local.date.year))
            }
        }
    }

    @Test("P-REM-4 property: a cancelled reminder never fires after its cancellation")
    func cancelledNeverFire() async {
        let reminderGen = zip(oneOf(propertyZones), Gen<Recurrence>.case, Gen.int(in: 0...200), Gen.int(in: 0...23), Gen.int(in: 0...400))
        await propertyCheck(count: 60, input: reminderGen.array(of: 1...8)) { specs in
            let start = at("2026-01-01T00:00:00Z")
            var h = Harness(ReminderProcessor(), topic: Topics.reminderInbox)
            var cancelTimes: [String: Timestamp] = [:]
            var records: [(Timestamp, FleetRecord)] = []
            for (i, spec) in specs.enumerated() {
                let (zoneId, recurrence, dayOffset, hour, cancelAfterDays) = spec
                let local = LocalDateTime(date: CivilDate(year: 2026, month: 1, day: 2).adding(days: dayOffset), time: .init(hour: hour, minute: 0))
                let id = "r\(i)"
                if i % 2 == 0 {
                    records.append((start, followup(id, local.description, zone: zoneId, recurrence: recurrence)))
                } else {
                    let md = String(local.description.dropFirst(5).prefix(5))
                    records.append((start, birthday(id, md, zone: zoneId)))
                }
                let cancelAt = start + .days(Int64(cancelAfterDays)) + .hours(Int64(hour))
                cancelTimes[id] = cancelAt
                records.append((cancelAt, cancel(id)))
            }
            for (time, record) in records.sorted(by: { $0.0 < $1.0 }) { try h.process(record, at: time) }
            h.advance(to: start + .days(800))
            for output in h.outputs {
                guard let intent = output.intent, let id = intent.data["reminder_id"]?.stringValue, let cancelAt = cancelTimes[id] else { continue }
                #expect(output.timestamp < cancelAt, "\(id) fired at \(output.timestamp) after its cancellation at \(cancelAt)")
            }
            #expect(h.state.reminders.isEmpty)
        }
    }

    @Test("P-REM-2 exhaustive: follow-ups at every quarter hour around each DST transition fire once, at the asked time or the first valid minute after")
    func followupsAroundEveryTransition() throws {
        var cases = 0
        for zoneId in propertyZones {
            let zone = zone(zoneId)
            for year in [2024, 2026, 2031] {
                for transition in transitions(in: zone, year: year) {
                    // Wall-clock times from 2 h before to 2 h after the transition, on the old offset.
                    let wallBefore = zone.localDateTime(at: transition - .seconds(1))
                    let base = Timestamp(secondsSinceEpoch: wallBefore.wallSeconds) - .hours(2)
                    for step in 0...16 {
                        let wall = base + .minutes(Int64(step * 15))
                        let asked = Zone.utc.localDateTime(at: wall)
                        for recurrence in [Recurrence.none, .weekly] {
                            var h = Harness(ReminderProcessor(), topic: Topics.reminderInbox)
                            let upsertAt = transition - .days(3)
                            try h.process(followup("f", asked.description, zone: zoneId, recurrence: recurrence), at: upsertAt)
                            h.advance(to: transition + .days(8))
                            let firings = h.outputs.compactMap { o in o.intent.map { (o.timestamp, $0.data["scheduled_local"]?.stringValue) } }
                            let expectedCount = recurrence == .none ? 1 : 2
                            #expect(firings.count == expectedCount, "\(zoneId) \(asked) \(recurrence)")
                            if let first = firings.first {
                                #expect(first.1 == asked.description)
                                #expect(isAskedLocalTime(first.0, asked, in: zone), "\(zoneId) \(asked) fired at \(first.0)")
                            }
                            cases += 1
                        }
                    }
                }
            }
        }
        #expect(cases > 500)  // the zones above have transitions: the loop must have run
    }
}

/// The instants in `year` at which `zone`'s offset changes.
private func transitions(in zone: Zone, year: Int) -> [Timestamp] {
    var result: [Timestamp] = []
    var day = Timestamp(secondsSinceEpoch: Int64(CivilDate(year: year, month: 1, day: 1).daysSinceEpoch) * 86_400)
    let end = Timestamp(secondsSinceEpoch: Int64(CivilDate(year: year + 1, month: 1, day: 1).daysSinceEpoch) * 86_400)
    while day < end {
        let next = day + .days(1)
        if zone.offsetSeconds(at: day) != zone.offsetSeconds(at: next) {
            var low = day
            var high = next
            while high - low > .seconds(1) {
                let mid = low + TimeSpan(milliseconds: (high - low).milliseconds / 2)
                if zone.offsetSeconds(at: mid) == zone.offsetSeconds(at: low) { low = mid } else { high = mid }
            }
            result.append(Timestamp(secondsSinceEpoch: high.secondsSinceEpoch))
        }
        day = next
    }
    return result
}
