/// A calendar date in the proleptic Gregorian calendar, with no time zone attached.
///
/// Used for local days (P-TIME-1): "today" for a user is a `CivilDate` in their zone.
/// Day arithmetic goes through `daysSinceEpoch`, which is exact and cheap.
public struct CivilDate: Hashable, Comparable, Sendable {
    public var year: Int
    public var month: Int
    public var day: Int

    @inlinable
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`).
    public init(daysSinceEpoch days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: m, day: d)
    }

    public static func < (lhs: CivilDate, rhs: CivilDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    public func adding(days: Int) -> CivilDate { CivilDate(daysSinceEpoch: daysSinceEpoch + days) }

    /// Whole days from `self` to `other` (positive when `other` is later).
    public func days(until other: CivilDate) -> Int { other.daysSinceEpoch - daysSinceEpoch }

    /// 1 = Monday … 7 = Sunday (ISO 8601).
    public var isoWeekday: Int {
        let d = daysSinceEpoch  // 1970-01-01 was a Thursday (4)
        return ((d % 7) + 7 + 3) % 7 + 1
    }

    public static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension CivilDate: CustomStringConvertible {
    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return s.count >= w ? s : String(repeating: "0", count: w - s.count) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Parses `YYYY-MM-DD`, rejecting impossible dates.
    public init?(iso text: Substring) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
              (1...12).contains(m), d >= 1, d <= CivilDate.daysInMonth(year: y, month: m)
        else { return nil }
        self.init(year: y, month: m, day: d)
    }
}

extension CivilDate: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let d = CivilDate(iso: Substring(s)) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(s)' is not a date YYYY-MM-DD")
        }
        self = d
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// A wall-clock time of day, minute resolution (quiet hours, digest time, reminders).
public struct LocalTimeOfDay: Hashable, Comparable, Sendable {
    public var hour: Int
    public var minute: Int

    public init(hour: Int, minute: Int) {
        self.hour = hour
        self.minute = minute
    }

    public var minuteOfDay: Int { hour * 60 + minute }

    public static func < (lhs: LocalTimeOfDay, rhs: LocalTimeOfDay) -> Bool { lhs.minuteOfDay < rhs.minuteOfDay }

    /// Parses `HH:MM` (00:00–23:59).
    public init?(_ text: Substring) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
              let h = Int(parts[0]), let m = Int(parts[1]), (0..<24).contains(h), (0..<60).contains(m)
        else { return nil }
        self.init(hour: h, minute: m)
    }
}

extension LocalTimeOfDay: CustomStringConvertible {
    public var description: String {
        (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
    }
}

extension LocalTimeOfDay: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let t = LocalTimeOfDay(Substring(s)) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(s)' is not a time HH:MM")
        }
        self = t
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// A local date and wall-clock time with no zone (`YYYY-MM-DDTHH:MM`), as users schedule
/// follow-ups.
public struct LocalDateTime: Hashable, Comparable, Sendable {
    public var date: CivilDate
    public var time: LocalTimeOfDay

    public init(date: CivilDate, time: LocalTimeOfDay) {
        self.date = date
        self.time = time
    }

    public static func < (lhs: LocalDateTime, rhs: LocalDateTime) -> Bool {
        (lhs.date, lhs.time) < (rhs.date, rhs.time)
    }

    /// Seconds since 1970-01-01T00:00 as if the local wall clock were UTC.
    public var wallSeconds: Int64 {
        Int64(date.daysSinceEpoch) * 86_400 + Int64(time.minuteOfDay) * 60
    }

    public init?(_ text: Substring) {
        let parts = text.split(separator: "T", omittingEmptySubsequences: false)
        guard parts.count == 2, let d = CivilDate(iso: parts[0]), let t = LocalTimeOfDay(parts[1]) else { return nil }
        self.init(date: d, time: t)
    }
}

extension LocalDateTime: CustomStringConvertible {
    public var description: String { "\(date)T\(time)" }
}

extension LocalDateTime: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let v = LocalDateTime(Substring(s)) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(s)' is not a local date-time YYYY-MM-DDTHH:MM")
        }
        self = v
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}
