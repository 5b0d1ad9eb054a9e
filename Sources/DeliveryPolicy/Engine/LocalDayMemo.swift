import FleetModel

/// The calendar date of the local day a user's last step fell on, to turn an instant into the
/// local wall clock without redoing the calendar arithmetic.
///
/// Why: every step starts by converting `now` to the user's local time, and most of that cost
/// was not the zone's offset (a table lookup) but turning days since the epoch into a
/// year/month/day and back (`CivilDate(daysSinceEpoch:)`, `daysSinceEpoch`), although a user's
/// consecutive records nearly always fall on the same local day. The memo maps one day number
/// to its date, a pure function of the number, so a hit gives exactly what the conversion
/// would. Like `LapseDueMemo` it lives in memory only: never encoded, no part of `==` or
/// hashing; a decoded state starts without it.
struct LocalDayMemo: Hashable, Sendable {
    private var days = Int.min
    private var date = CivilDate(year: 1970, month: 1, day: 1)

    /// `zone.localDateTime(at: instant)` and its date as days since the epoch. The arithmetic
    /// is `Zone.localDateTime(at:)`'s (floor division of the wall-clock seconds by a day), with
    /// the date taken from the memo when the day is the one it holds.
    mutating func localDateTime(in zone: Zone, at instant: Timestamp) -> (local: LocalDateTime, days: Int) {
        let wall = instant.secondsSinceEpoch + zone.offsetSeconds(at: instant)
        let (d, r) = wall.quotientAndRemainder(dividingBy: 86_400)
        let day = Int(r < 0 ? d - 1 : d)
        let secondOfDay = r < 0 ? r + 86_400 : r
        if day != days {
            days = day
            date = CivilDate(daysSinceEpoch: day)
        }
        let time = LocalTimeOfDay(hour: Int(secondOfDay / 3600), minute: Int(secondOfDay % 3600 / 60))
        return (LocalDateTime(date: date, time: time), day)
    }

    static func == (a: LocalDayMemo, b: LocalDayMemo) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
