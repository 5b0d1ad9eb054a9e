import FleetModel

/// Quiet hours as local wall-clock times (P-DND-1), possibly spanning midnight.
///
/// Membership is decided on the local wall clock at the instant, so DST needs no special case:
/// when a start such as 02:30 falls into a spring-forward gap, the clock jumps from 01:59 past
/// it and quiet hours are simply in force from the first valid minute; the end is resolved with
/// `Zone.instant(for:)` (gap → first valid minute after, overlap → first occurrence).
struct QuietHoursWindow: Hashable, Sendable {
    var start: LocalTimeOfDay
    var end: LocalTimeOfDay

    /// Whether `local` lies inside quiet hours. Equal start and end mean no quiet hours.
    func contains(_ local: LocalTimeOfDay) -> Bool {
        let m = local.minuteOfDay, s = start.minuteOfDay, e = end.minuteOfDay
        if s == e { return false }
        return s < e ? (m >= s && m < e) : (m >= s || m < e)
    }

    /// The instant the quiet hours around `instant` end, or nil when `instant` is not inside them.
    func end(containing instant: Timestamp, in zone: Zone) -> Timestamp? {
        end(containing: instant, local: zone.localDateTime(at: instant), in: zone)
    }

    /// As above, with the local time at `instant` already known.
    func end(containing instant: Timestamp, local: LocalDateTime, in zone: Zone) -> Timestamp? {
        guard contains(local.time) else { return nil }
        let s = start.minuteOfDay, m = local.time.minuteOfDay
        // Spanning midnight and before it: the end is tomorrow.
        let endDate = (s > end.minuteOfDay && m >= s) ? local.date.adding(days: 1) : local.date
        let endInstant = zone.instant(for: LocalDateTime(date: endDate, time: end))
        // A repeated hour (DST end) can put the resolved end behind us: then they are over.
        return endInstant > instant ? endInstant : nil
    }
}
