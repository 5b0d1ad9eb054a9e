import Foundation
import Synchronization

/// A user's IANA time zone, and the conversions between instants and local wall-clock time
/// that every "day", "09:00" or "22:00" rule needs (P-TIME-1).
///
/// Offsets come from the system's tz database through Foundation, cached per zone as the
/// stretch of time over which the offset is constant, so the hot path is two integer
/// comparisons. The cache is shared by all copies of a zone; it never changes a result.
public struct Zone: Hashable, Sendable {
    public let identifier: String
    private let table: OffsetTable

    public static let utc = Zone(validated: "UTC")

    /// Returns nil when `identifier` is not a zone the tz database knows.
    public init?(identifier: String) {
        if let cached = ZoneRegistry.shared.zone(identifier) {
            self = cached
            return
        }
        guard TimeZone(identifier: identifier) != nil else { return nil }
        self.init(validated: identifier)
        ZoneRegistry.shared.remember(self)
    }

    private init(validated identifier: String) {
        self.identifier = identifier
        self.table = OffsetTable(identifier: identifier)
    }

    public static func == (lhs: Zone, rhs: Zone) -> Bool { lhs.identifier == rhs.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// Seconds east of UTC in force at `instant`.
    public func offsetSeconds(at instant: Timestamp) -> Int64 {
        table.offset(atSecond: instant.secondsSinceEpoch)
    }

    /// The local date and time (minute resolution) at `instant`.
    public func localDateTime(at instant: Timestamp) -> LocalDateTime {
        let wall = instant.secondsSinceEpoch + offsetSeconds(at: instant)
        let (d, r) = wall.quotientAndRemainder(dividingBy: 86_400)
        let days = r < 0 ? d - 1 : d
        let sod = r < 0 ? r + 86_400 : r
        return LocalDateTime(
            date: CivilDate(daysSinceEpoch: Int(days)),
            time: LocalTimeOfDay(hour: Int(sod / 3600), minute: Int(sod % 3600 / 60)))
    }

    /// The local calendar day at `instant`.
    public func localDate(at instant: Timestamp) -> CivilDate { localDateTime(at: instant).date }

    /// The instant at which the local wall clock shows `local`.
    ///
    /// A wall time that occurs twice (DST ends) resolves to its first occurrence; one that does
    /// not exist (DST starts) resolves to the first instant after the gap, i.e. the first valid
    /// minute after it (P-REM-2, and quiet hours starting in a gap).
    public func instant(for local: LocalDateTime) -> Timestamp {
        let wall = local.wallSeconds
        let before = table.offset(atSecond: wall - 86_400)
        let after = table.offset(atSecond: wall + 86_400)
        // The wall time exists under the offset before and/or after a transition in between:
        // the earliest instant that maps back to it is the answer.
        let early = wall - before, late = wall - after
        let earlyValid = table.offset(atSecond: early) == before
        let lateValid = table.offset(atSecond: late) == after
        switch (earlyValid, lateValid) {
        case (true, true): return Timestamp(secondsSinceEpoch: min(early, late))
        case (true, false): return Timestamp(secondsSinceEpoch: early)
        case (false, true): return Timestamp(secondsSinceEpoch: late)
        case (false, false): break
        }
        // In a gap: the transition lies between wall - after and wall - before.
        var low = wall - max(before, after)
        var high = wall - min(before, after)
        let offsetAtLow = table.offset(atSecond: low)
        while high - low > 1 {
            let mid = low + (high - low) / 2
            if table.offset(atSecond: mid) == offsetAtLow { low = mid } else { high = mid }
        }
        return Timestamp(secondsSinceEpoch: high)
    }

    /// The instant local midnight starts `date` (or the first instant of the day if midnight
    /// falls into a gap).
    public func startOfDay(_ date: CivilDate) -> Timestamp {
        instant(for: LocalDateTime(date: date, time: LocalTimeOfDay(hour: 0, minute: 0)))
    }
}

extension Zone: Codable {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let id = try c.decode(String.self)
        guard let zone = Zone(identifier: id) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(id)' is not an IANA time zone")
        }
        self = zone
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(identifier)
    }
}

/// Zones by identifier, so each is resolved against the tz database once per process.
private final class ZoneRegistry: Sendable {
    static let shared = ZoneRegistry()
    private let zones = Mutex<[String: Zone]>([:])

    func zone(_ id: String) -> Zone? { zones.withLock { $0[id] } }
    func remember(_ zone: Zone) { zones.withLock { $0[zone.identifier] = zone } }
}

/// Offsets of one zone as constant stretches `[start, end)`, filled lazily from Foundation.
private final class OffsetTable: Sendable {
    private struct Stretch {
        var start: Int64
        var end: Int64
        var offset: Int64
    }

    private let timeZone: TimeZone
    private let stretches = Mutex<[Stretch]>([])
    private let fixedOffset: Int64?
    /// The stretch the last lookup found, as a `LastStretch` word (0: none yet).
    ///
    /// Why: one table serves every user of the zone on every thread, and nearly every lookup
    /// falls in the stretch the one before found. Through the lock, each of the ~5 lookups of a
    /// delivery step was two atomic read-modify-writes on a cache line the folding threads
    /// shared; a hit here is one plain load, and the lock is taken only on a miss.
    private let last = Atomic<UInt64>(0)

    init(identifier: String) {
        let tz = TimeZone(identifier: identifier) ?? TimeZone(identifier: "UTC")!
        self.timeZone = tz
        // Zones without transitions (UTC, fixed offsets) need no table.
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        if tz.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: 0)) == nil,
           tz.secondsFromGMT(for: Date(timeIntervalSince1970: 0)) == tz.secondsFromGMT(for: now) {
            fixedOffset = Int64(tz.secondsFromGMT(for: now))
        } else {
            fixedOffset = nil
        }
    }

    func offset(atSecond second: Int64) -> Int64 {
        if let fixedOffset { return fixedOffset }
        if let offset = LastStretch.offset(in: last.load(ordering: .relaxed), atSecond: second) { return offset }
        let stretch: Stretch
        if let hit = stretches.withLock({ list in list.first { $0.start <= second && second < $0.end } }) {
            stretch = hit
        } else {
            stretch = computeStretch(containing: second)
            stretches.withLock { list in
                if list.count > 64 { list.removeFirst(list.count - 64) }
                list.append(stretch)
            }
        }
        last.store(LastStretch.word(start: stretch.start, end: stretch.end, offset: stretch.offset), ordering: .relaxed)
        return stretch.offset
    }

    /// The constant-offset stretch around `second`, bounded by the neighbouring transitions
    /// (or a week either side when Foundation reports none: the bound only limits caching).
    private func computeStretch(containing second: Int64) -> Stretch {
        let date = Date(timeIntervalSince1970: TimeInterval(second))
        let offset = Int64(timeZone.secondsFromGMT(for: date))
        let horizon: Int64 = 7 * 86_400
        var end = second + horizon
        if let next = timeZone.nextDaylightSavingTimeTransition(after: date) {
            end = min(end, Int64(next.timeIntervalSince1970.rounded(.down)))
        }
        // Walk back to the previous transition within the horizon (day steps, then refine).
        var start = second
        var probe = second
        while probe > second - horizon {
            let candidate = probe - 86_400
            if Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(candidate)))) != offset {
                var low = candidate, high = probe
                while high - low > 1 {
                    let mid = low + (high - low) / 2
                    if Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(mid)))) == offset {
                        high = mid
                    } else {
                        low = mid
                    }
                }
                start = high
                break
            }
            probe = candidate
            start = probe
        }
        // Guard against a transition Foundation did not report before `end`.
        if Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(end - 1)))) != offset {
            var low = second, high = end - 1
            while high - low > 1 {
                let mid = low + (high - low) / 2
                if Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(mid)))) == offset {
                    low = mid
                } else {
                    high = mid
                }
            }
            end = high
        }
        return Stretch(start: start, end: max(end, second + 1), offset: offset)
    }
}

/// A stretch of constant offset packed into one word, so that it can be read and replaced
/// atomically without a lock: the whole minutes inside `[start, end)` (a stretch's bounds fall
/// on any second; any part of it has its offset), and the offset in minutes.
///
/// Layout: bit 58 set for a stretch; bits 31–57 the first minute since the epoch (27 bits,
/// to the year 2225); bits 11–30 the number of minutes (20 bits, about two years, longer than
/// any stretch); bits 0–10 the offset in minutes plus 1 024. A stretch that does not fit (before
/// 1970, an offset in seconds such as an old local mean time, or none of it whole minutes) is
/// 0, which holds nothing: its lookups take the lock, as every lookup did before.
enum LastStretch {
    static func word(start: Int64, end: Int64, offset: Int64) -> UInt64 {
        let first = (start + 59).floorDivided(by: 60), past = end.floorDivided(by: 60)
        let minutes = past - first, offsetMinutes = offset / 60
        guard offset % 60 == 0, first >= 0, first < 1 << 27, minutes > 0, minutes < 1 << 20,
              offsetMinutes >= -1_024, offsetMinutes < 1_024
        else { return 0 }
        return 1 << 58 | UInt64(first) << 31 | UInt64(minutes) << 11 | UInt64(offsetMinutes + 1_024)
    }

    /// The offset in seconds at `second` if `word` holds a stretch containing it.
    static func offset(in word: UInt64, atSecond second: Int64) -> Int64? {
        guard word & 1 << 58 != 0 else { return nil }
        let first = Int64(word >> 31 & (1 << 27 - 1)) * 60
        let length = Int64(word >> 11 & (1 << 20 - 1)) * 60
        guard second >= first, second - first < length else { return nil }
        return (Int64(word & (1 << 11 - 1)) - 1_024) * 60
    }
}

extension Int64 {
    /// Division rounding towards negative infinity.
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let (q, r) = quotientAndRemainder(dividingBy: divisor)
        return r < 0 ? q - 1 : q
    }
}
