public import FleetModel

/// One reminder of a user with its schedule and where it stands: the pending occurrence and the
/// instants its timers are due, precomputed so finding a user's next wake-up is a scan of
/// timestamps with no time-zone work.
public struct ScheduledReminder: Codable, Hashable, Sendable {
    public var reminderId: String
    public var kind: ReminderKind
    public var contactId: String
    public var contactName: String
    public var note: String?
    public var zone: Zone
    public var schedule: ReminderSchedule

    /// The pending occurrence and its index; nil once a one-off reminder has fired.
    public var next: LocalDateTime?
    public var nextIndex: Int
    /// When `next` fires: `zone.instant(for: next)` (DST gap → first valid minute after,
    /// overlap → first occurrence).
    public var fireAt: Timestamp?
    /// Until when `next` (or, once finished, the last fired occurrence) may still fire: a
    /// birthday until the local midnight ending its day, a follow-up for the late grace.
    public var lateUntil: Timestamp?
    /// When the "Upcoming" item for `next` is due; nil when not applicable or already shown.
    public var upcomingAt: Timestamp?
    /// The occurrence whose "Upcoming" item was last emitted, and when that item expires.
    public var upcomingShownFor: LocalDateTime?
    public var upcomingShownUntil: Timestamp?
    /// The last occurrence that fired: never fires again, even when the reminder is upserted
    /// anew (P-REM-4 "fires exactly once per occurrence").
    public var lastFired: LocalDateTime?

    /// The earliest time a timer of this reminder is due.
    var wakeAt: Timestamp? {
        switch (fireAt, upcomingAt) {
        case (let f?, let u?): min(f, u)
        case (let f?, nil): f
        case (nil, let u): u
        }
    }

    /// Finished one-off reminders are kept only until their occurrence could no longer fire.
    var isFinished: Bool { next == nil }

    /// The `item_id` of its "Upcoming" item: stable, so a refresh replaces it.
    var upcomingItemId: String { "reminder:" + reminderId }
}
