public import FleetModel

/// What the reminder worker remembers about one user: their reminders, sorted by id, and the
/// earliest wake-up among them.
public struct ReminderState: Codable, Hashable, Sendable {
    /// Sorted by `reminderId` (binary search on upsert and cancel; deterministic encoding).
    public var reminders: [ScheduledReminder] = []
    /// Cached minimum of the reminders' `wakeAt`, kept current by every change.
    public var nextWake: Timestamp?

    public init() {}

    func index(of reminderId: String) -> (found: Bool, at: Int) {
        var low = 0
        var high = reminders.count
        while low < high {
            let mid = (low + high) / 2
            if reminders[mid].reminderId < reminderId { low = mid + 1 } else { high = mid }
        }
        return (low < reminders.count && reminders[low].reminderId == reminderId, low)
    }

    mutating func refreshNextWake() {
        nextWake = reminders.lazy.compactMap(\.wakeAt).min()
    }
}

/// The reminder worker's decisions (POLICY.md P-REM-1…4), folding `rin.reminder.inbox`
/// (forwarded `reminder.upserted` / `reminder.cancelled`, and ticks).
///
/// - Birthdays fire `reminder.birthday` at `birthdayTime` local on the day every year
///   (29 February → 28 February in other years), expiring at the local midnight that ends the
///   day; `upcomingWindowDays` local days before, an "Upcoming" item appears (P-REM-1, P-REM-3).
/// - Follow-ups fire `reminder.followup` at their local date-time, once, weekly or monthly
///   (P-REM-2). Times in a DST gap fire at the first valid minute after it; times that occur
///   twice fire once, at the first.
/// - Upsert replaces a reminder by id; cancel removes it and withdraws its "Upcoming" item
///   (re-sent with `expires_at` = now); a cancelled reminder never fires (P-REM-4).
/// - Each occurrence fires exactly once: firing moves the reminder to its next occurrence, and
///   the last fired occurrence survives an upsert of the same id. An occurrence whose time
///   passed more than the late grace ago (a birthday: after its day) is skipped, not fired late.
/// - A user has at most `maxPerUser` reminders (500 in `rin`): every operation is O(that) at
///   worst, and an upsert of a new reminder beyond it is rejected (dead-lettered).
public struct ReminderProcessor: UserProcessor {
    public let settings: ReminderSettings

    public init(settings: ReminderSettings = .rin) { self.settings = settings }

    public func initialState(userId: String) -> ReminderState { ReminderState() }

    public func process(_ record: FleetRecord, state: inout ReminderState, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .reminderUpserted(let upsert):
            try upsert.validate()
            try self.upsert(upsert, state: &state, context: &context)
        case .reminderCancelled(let cancel):
            try cancel.validate()
            self.cancel(cancel.reminderId, state: &state, context: &context)
        case .tick:
            return
        default:
            throw RecordError("reminder-worker does not process records of type '\(record.type)'")
        }
        state.refreshNextWake()
    }

    public func fireTimers(state: inout ReminderState, context: inout ProcessingContext) {
        let now = context.now
        // Earliest due first; an "Upcoming" item before a firing at the same instant; then by id.
        while let index = earliestDue(in: state, at: now) {
            runDue(&state.reminders[index], context: &context)
        }
        state.refreshNextWake()
    }

    public func nextWakeUp(_ state: ReminderState) -> Timestamp? { state.nextWake }
    public static let nextWakeUpDependsOnStateAlone = true

    // MARK: - Upsert and cancel

    private func upsert(_ upsert: ReminderUpserted, state: inout ReminderState, context: inout ProcessingContext) throws(RecordError) {
        let now = context.now
        let schedule = try schedule(of: upsert)
        // Finished one-off reminders are dropped once their occurrence can no longer fire.
        let kept = state.reminders.filter {
            !$0.isFinished || $0.reminderId == upsert.reminderId || ($0.lateUntil.map { $0 > now } ?? false)
        }
        let isNew = !kept.contains { $0.reminderId == upsert.reminderId }
        if isNew && kept.count >= settings.maxPerUser {  // checked before any change: a rejected record changes nothing
            throw RecordError(
                "user already has \(settings.maxPerUser) reminders, the most allowed (upstream.reminders.max_per_user); "
                    + "reminder '\(upsert.reminderId)' was not added")
        }
        state.reminders = kept
        let (found, index) = state.index(of: upsert.reminderId)
        let previous = found ? state.reminders[index] : nil
        var reminder = ScheduledReminder(
            reminderId: upsert.reminderId, kind: upsert.kind, contactId: upsert.contactId, contactName: upsert.contactName,
            note: upsert.note, zone: upsert.timeZone, schedule: schedule, next: nil, nextIndex: 0,
            fireAt: nil, lateUntil: nil, upcomingAt: nil, upcomingShownFor: nil, upcomingShownUntil: nil,
            lastFired: previous?.lastFired)
        arm(&reminder, from: nil, now: now)

        // An "Upcoming" item already shown stays as it is when it still describes the pending
        // occurrence of the same contact; otherwise it is re-shown below or withdrawn.
        var staleItem = false
        if let previous, let shown = previous.upcomingShownFor, let until = previous.upcomingShownUntil, until > now {
            if shown == reminder.next && previous.contactName == reminder.contactName && previous.contactId == reminder.contactId {
                reminder.upcomingShownFor = shown
                reminder.upcomingShownUntil = until
                reminder.upcomingAt = nil
            } else {
                staleItem = true
            }
        }
        while let due = reminder.wakeAt, due <= now { runDue(&reminder, context: &context) }
        if staleItem && reminder.upcomingShownFor == nil {
            withdrawUpcoming(reminderId: reminder.reminderId, context: &context)
        }

        if found { state.reminders[index] = reminder } else { state.reminders.insert(reminder, at: index) }
    }

    private func cancel(_ reminderId: String, state: inout ReminderState, context: inout ProcessingContext) {
        let (found, index) = state.index(of: reminderId)
        guard found else { return }  // already gone: cancelling is idempotent
        let reminder = state.reminders.remove(at: index)
        if reminder.upcomingShownFor != nil, let until = reminder.upcomingShownUntil, until > context.now {
            withdrawUpcoming(reminderId: reminderId, context: &context)
        }
    }

    private func schedule(of upsert: ReminderUpserted) throws(RecordError) -> ReminderSchedule {
        switch upsert.kind {
        case .birthday:
            guard let birthday = upsert.birthday else { throw RecordError("missing required field 'birthday'") }
            return .yearly(birthday: birthday, time: settings.birthdayTime)
        case .followup:
            guard let at = upsert.fireAtLocal else { throw RecordError("missing required field 'fire_at_local'") }
            switch upsert.recurrence {
            case .none: return .once(at: at)
            case .weekly: return .weekly(first: at)
            case .monthly: return .monthly(first: at)
            }
        }
    }

    // MARK: - Timers

    private func earliestDue(in state: ReminderState, at now: Timestamp) -> Int? {
        var best: (index: Int, time: Timestamp, upcomingFirst: Bool)?
        for (index, reminder) in state.reminders.enumerated() {
            guard let wake = reminder.wakeAt, wake <= now else { continue }
            let upcomingFirst = reminder.upcomingAt == wake
            if let current = best {
                // Reminders are sorted by id, so a tie on time and kind keeps the smaller id.
                if wake < current.time || (wake == current.time && upcomingFirst && !current.upcomingFirst) {
                    best = (index, wake, upcomingFirst)
                }
            } else {
                best = (index, wake, upcomingFirst)
            }
        }
        return best?.index
    }

    /// Runs the earliest due timer of `reminder` (at or before `context.now`).
    private func runDue(_ reminder: inout ScheduledReminder, context: inout ProcessingContext) {
        guard let next = reminder.next else { return }
        if let upcomingAt = reminder.upcomingAt, upcomingAt <= context.now, upcomingAt <= (reminder.fireAt ?? upcomingAt) {
            showUpcoming(&reminder, occurrence: next, context: &context)
            return
        }
        guard let fireAt = reminder.fireAt, fireAt <= context.now else { return }
        if let lateUntil = reminder.lateUntil, context.now < lateUntil {
            fire(reminder, occurrence: next, context: &context)
        }
        reminder.lastFired = next
        arm(&reminder, from: reminder.nextIndex + 1, now: context.now)
    }

    /// Moves `reminder` to its first occurrence (from index `from`, or the one near `now`)
    /// that is after the last fired one and can still fire at `now`; none → finished.
    private func arm(_ reminder: inout ScheduledReminder, from start: Int?, now: Timestamp) {
        let localToday = reminder.zone.localDate(at: now)
        var index = max(start ?? Int.min, reminder.schedule.scanStart(before: localToday))
        // Occurrences are at most a year apart and the scan starts within about one of `now`,
        // so a handful of steps suffice; the cap only guards against a malformed schedule.
        for _ in 0..<64 {
            guard let occurrence = reminder.schedule.occurrence(index) else { break }
            let lateUntil = lateLimit(of: occurrence, reminder)
            if now < lateUntil && reminder.lastFired.map({ occurrence > $0 }) ?? true {
                reminder.next = occurrence
                reminder.nextIndex = index
                reminder.fireAt = reminder.zone.instant(for: occurrence)
                reminder.lateUntil = lateUntil
                reminder.upcomingAt = reminder.upcomingShownFor == occurrence ? nil : upcomingTime(of: occurrence, reminder)
                return
            }
            index += 1
        }
        reminder.next = nil
        reminder.fireAt = nil
        reminder.upcomingAt = nil
        reminder.lateUntil = reminder.lastFired.map { lateLimit(of: $0, reminder) }
    }

    /// A birthday stays valid until the local midnight ending its day (P-REM-1, P-EXP-1); a
    /// follow-up for `followupLateGraceMinutes` after its time.
    private func lateLimit(of occurrence: LocalDateTime, _ reminder: ScheduledReminder) -> Timestamp {
        switch reminder.kind {
        case .birthday: reminder.zone.startOfDay(occurrence.date.adding(days: 1))
        case .followup: reminder.zone.instant(for: occurrence) + .minutes(Int64(settings.followupLateGraceMinutes))
        }
    }

    /// P-REM-3: birthdays only (POLICY.md). The item appears at the start of the local day
    /// `upcomingWindowDays` before the birthday.
    private func upcomingTime(of occurrence: LocalDateTime, _ reminder: ScheduledReminder) -> Timestamp? {
        guard reminder.kind == .birthday else { return nil }
        return reminder.zone.startOfDay(occurrence.date.adding(days: -settings.upcomingWindowDays))
    }

    // MARK: - Outputs

    private func fire(_ reminder: ScheduledReminder, occurrence: LocalDateTime, context: inout ProcessingContext) {
        switch reminder.kind {
        case .birthday:  // P-REM-1
            context.emitIntent(
                .birthday,
                data: [
                    "reminder_id": .string(reminder.reminderId), "contact_id": .string(reminder.contactId),
                    "contact_name": .string(reminder.contactName),
                ],
                expiresAt: lateLimit(of: occurrence, reminder))
        case .followup:  // P-REM-2
            context.emitIntent(.followup, data: [
                "reminder_id": .string(reminder.reminderId), "contact_id": .string(reminder.contactId),
                "contact_name": .string(reminder.contactName), "note": .string(reminder.note ?? ""),
                "scheduled_local": .string(occurrence.description),
            ])
        }
    }

    private func showUpcoming(_ reminder: inout ScheduledReminder, occurrence: LocalDateTime, context: inout ProcessingContext) {
        let until = lateLimit(of: occurrence, reminder)
        context.emitSectionItem(
            section: Section.upcoming, itemId: reminder.upcomingItemId,
            item: [
                "kind": .string(reminder.kind.rawValue), "reminder_id": .string(reminder.reminderId),
                "contact_id": .string(reminder.contactId), "contact_name": .string(reminder.contactName),
                "date": .string(occurrence.date.description),
            ],
            expiresAt: until)
        reminder.upcomingShownFor = occurrence
        reminder.upcomingShownUntil = until
        reminder.upcomingAt = nil
    }

    /// Withdraws an "Upcoming" item by re-sending its id already expired.
    private func withdrawUpcoming(reminderId: String, context: inout ProcessingContext) {
        context.emitSectionItem(
            section: Section.upcoming, itemId: "reminder:" + reminderId,
            item: ["reminder_id": .string(reminderId), "withdrawn": true], expiresAt: context.now)
    }
}
