public import FleetModel

/// When a reminder's occurrences fall, as local wall-clock date-times (P-REM-1, P-REM-2).
///
/// Occurrences are numbered by an index: the year for birthdays, the count of weeks or months
/// since the first occurrence for follow-ups. Working in local time and converting each
/// occurrence with `Zone.instant(for:)` is what keeps "09:00" at 09:00 across DST changes.
public enum ReminderSchedule: Codable, Hashable, Sendable {
    /// Every year on `birthday` at `time`; 29 February falls on 28 February in other years.
    case yearly(birthday: MonthDay, time: LocalTimeOfDay)
    /// Once, at `at`.
    case once(at: LocalDateTime)
    /// Every 7 days from `first`, same wall-clock time.
    case weekly(first: LocalDateTime)
    /// Every month from `first`, on the same day of the month or the month's last day when it is
    /// shorter (31st → 30th, 28th/29th), same wall-clock time.
    case monthly(first: LocalDateTime)

    /// The occurrence numbered `index`, or nil when there is none.
    public func occurrence(_ index: Int) -> LocalDateTime? {
        switch self {
        case .yearly(let birthday, let time):
            return LocalDateTime(date: birthday.date(in: index), time: time)
        case .once(let at):
            return index == 0 ? at : nil
        case .weekly(let first):
            guard index >= 0 else { return nil }
            return LocalDateTime(date: first.date.adding(days: 7 * index), time: first.time)
        case .monthly(let first):
            guard index >= 0 else { return nil }
            let months = first.date.year * 12 + (first.date.month - 1) + index
            let year = months / 12
            let month = months % 12 + 1
            let day = min(first.date.day, CivilDate.daysInMonth(year: year, month: month))
            return LocalDateTime(date: CivilDate(year: year, month: month, day: day), time: first.time)
        }
    }

    /// An index whose occurrence lies before `date` minus a day, or the first index: a forward
    /// scan from it cannot miss an occurrence on or after `date`, and takes a few steps.
    public func scanStart(before date: CivilDate) -> Int {
        switch self {
        case .yearly:
            return date.year - 1
        case .once:
            return 0
        case .weekly(let first):
            return max(0, first.date.days(until: date) / 7 - 1)
        case .monthly(let first):
            return max(0, (date.year * 12 + date.month) - (first.date.year * 12 + first.date.month) - 1)
        }
    }
}
