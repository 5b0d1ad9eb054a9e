/// A point in time as whole milliseconds since the Unix epoch.
///
/// Kafka record timestamps are milliseconds, and every time the fleet reasons about comes from
/// the log (DESIGN.md "Time"), so an integer keeps arithmetic exact and comparisons total:
/// a re-run over the same log reproduces the same values bit for bit. Encodes as RFC 3339 UTC.
public struct Timestamp: Hashable, Comparable, Sendable {
    public var millisecondsSinceEpoch: Int64

    @inlinable
    public init(millisecondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    @inlinable
    public init(secondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = secondsSinceEpoch * 1000
    }

    @inlinable
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSinceEpoch < rhs.millisecondsSinceEpoch
    }

    /// Whole seconds since the epoch, rounded towards negative infinity.
    @inlinable
    public var secondsSinceEpoch: Int64 {
        let (q, r) = millisecondsSinceEpoch.quotientAndRemainder(dividingBy: 1000)
        return r < 0 ? q - 1 : q
    }

    @inlinable
    public func adding(_ duration: TimeSpan) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: millisecondsSinceEpoch + duration.milliseconds)
    }

    @inlinable
    public static func + (lhs: Timestamp, rhs: TimeSpan) -> Timestamp { lhs.adding(rhs) }

    @inlinable
    public static func - (lhs: Timestamp, rhs: TimeSpan) -> Timestamp {
        Timestamp(millisecondsSinceEpoch: lhs.millisecondsSinceEpoch - rhs.milliseconds)
    }

    @inlinable
    public static func - (lhs: Timestamp, rhs: Timestamp) -> TimeSpan {
        TimeSpan(milliseconds: lhs.millisecondsSinceEpoch - rhs.millisecondsSinceEpoch)
    }
}

/// A signed length of time in milliseconds.
public struct TimeSpan: Hashable, Comparable, Sendable, Codable {
    public var milliseconds: Int64

    @inlinable public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    @inlinable public static func seconds(_ s: Int64) -> TimeSpan { TimeSpan(milliseconds: s * 1000) }
    @inlinable public static func minutes(_ m: Int64) -> TimeSpan { TimeSpan(milliseconds: m * 60_000) }
    @inlinable public static func hours(_ h: Int64) -> TimeSpan { TimeSpan(milliseconds: h * 3_600_000) }
    @inlinable public static func days(_ d: Int64) -> TimeSpan { TimeSpan(milliseconds: d * 86_400_000) }
    @inlinable public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.milliseconds < rhs.milliseconds }
}

extension Timestamp: CustomStringConvertible {
    public var description: String { rfc3339 }
}

extension Timestamp: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let parsed = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not an RFC 3339 time")
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}

// MARK: - RFC 3339

extension Timestamp {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. Fractions beyond milliseconds are
    /// truncated. Hand-written because it runs for every record and must not depend on a
    /// locale or a formatter's configuration.
    public init?(rfc3339 text: String) {
        var utf8 = Array(text.utf8)
        guard utf8.count >= 20 else { return nil }
        func digits(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= utf8.count else { return nil }
            var value = 0
            for i in start..<(start + count) {
                let c = utf8[i]
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        // Lowercase t/z are allowed by RFC 3339.
        if utf8[10] == UInt8(ascii: "t") || utf8[10] == UInt8(ascii: " ") { utf8[10] = UInt8(ascii: "T") }
        guard let year = digits(0, 4), utf8[4] == UInt8(ascii: "-"),
              let month = digits(5, 2), utf8[7] == UInt8(ascii: "-"),
              let day = digits(8, 2), utf8[10] == UInt8(ascii: "T"),
              let hour = digits(11, 2), utf8[13] == UInt8(ascii: ":"),
              let minute = digits(14, 2), utf8[16] == UInt8(ascii: ":"),
              let second = digits(17, 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= CivilDate.daysInMonth(year: year, month: month),
              hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis = 0
        if index < utf8.count && utf8[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 100
            let start = index
            while index < utf8.count, utf8[index] >= 48, utf8[index] <= 57 {
                millis += Int(utf8[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < utf8.count else { return nil }
        var offsetSeconds = 0
        switch utf8[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == utf8.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == utf8.count, let oh = digits(index + 1, 2), utf8[index + 3] == UInt8(ascii: ":"),
                  let om = digits(index + 4, 2), oh < 24, om < 60
            else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (utf8[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        let days = CivilDate(year: year, month: month, day: day).daysSinceEpoch
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offsetSeconds)
        self.init(millisecondsSinceEpoch: seconds * 1000 + Int64(millis))
    }

    /// `2026-11-21T05:47:09Z`, or `2026-11-21T05:47:09.120Z` when there are milliseconds.
    ///
    /// Every output record with a time writes it this way, so the digits go straight into the
    /// string's bytes (formatting with `String(_:)` and padding took ~9 000 instructions a
    /// time, FoldProfile); a year outside 0–9999 takes `rfc3339Spelled`.
    public var rfc3339: String {
        withRFC3339UTF8 { String(decoding: $0, as: UTF8.self) } ?? rfc3339Spelled
    }

    /// Calls `body` with `rfc3339`'s bytes, written on the stack; nil, without calling it, for a
    /// year outside 0–9999 (`rfc3339Spelled`).
    ///
    /// Why: the canonical JSON writer copies a time's bytes straight into its output, where
    /// making the `String` first cost an allocation and a UTF-8 check for every decision held
    /// until a time (`Benchmarks/README.md`, "Runtime, fourteenth round").
    public func withRFC3339UTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result? {
        let (date, sod, millis) = utcParts
        guard (0...9999).contains(date.year) else { return nil }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            var index = 0
            func put(_ value: Int, _ width: Int) {
                var rest = value
                for position in stride(from: index + width - 1, through: index, by: -1) {
                    buffer[position] = UInt8(truncatingIfNeeded: 48 + rest % 10)
                    rest /= 10
                }
                index += width
            }
            func put(_ byte: UInt8) {
                buffer[index] = byte
                index += 1
            }
            put(date.year, 4); put(UInt8(ascii: "-")); put(date.month, 2); put(UInt8(ascii: "-")); put(date.day, 2)
            put(UInt8(ascii: "T"))
            put(sod / 3600, 2); put(UInt8(ascii: ":")); put(sod % 3600 / 60, 2); put(UInt8(ascii: ":")); put(sod % 60, 2)
            if millis != 0 { put(UInt8(ascii: ".")); put(millis, 3) }
            put(UInt8(ascii: "Z"))
            return try body(UnsafeBufferPointer(rebasing: buffer[..<index]))
        }
    }

    /// The UTC date, the second of that day and the milliseconds: what both spellings write.
    private var utcParts: (date: CivilDate, secondOfDay: Int, millis: Int) {
        let seconds = secondsSinceEpoch
        let millis = Int(millisecondsSinceEpoch - seconds * 1000)
        let (dayNumber, secondOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let days = secondOfDay < 0 ? dayNumber - 1 : dayNumber
        let sod = Int(secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay)
        return (CivilDate(daysSinceEpoch: Int(days)), sod, millis)
    }

    /// `rfc3339` spelled out with `String(_:)`, for any year: what it was before the fast path,
    /// which `TimestampTests` compares it with.
    var rfc3339Spelled: String {
        let (date, sod, millis) = utcParts
        var out = ""
        out.reserveCapacity(24)
        func pad(_ value: Int, _ width: Int) {
            let s = String(value)
            if s.count < width { out.append(String(repeating: "0", count: width - s.count)) }
            out.append(s)
        }
        pad(date.year, 4); out.append("-"); pad(date.month, 2); out.append("-"); pad(date.day, 2)
        out.append("T")
        pad(sod / 3600, 2); out.append(":"); pad(sod % 3600 / 60, 2); out.append(":"); pad(sod % 60, 2)
        if millis != 0 { out.append("."); pad(millis, 3) }
        out.append("Z")
        return out
    }
}
