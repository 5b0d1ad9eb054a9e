import FleetModel

/// One engine step: the profile, the user's state and the context it writes to. The rule
/// families extend it in their own files (intents, release, activity, lapse, timers).
struct EngineStep {
    let prepared: PreparedProfile
    var state: DeliveryState
    var context: ProcessingContext
    /// The local wall clock at `now`, computed once per step (and again if the zone changes):
    /// zone conversions are the most expensive thing the engine does.
    private(set) var localNow: LocalDateTime
    /// `localNow`'s date as days since the epoch: the ledger and pruning ask for it many
    /// times a step, and the calendar arithmetic is not free.
    private(set) var today: Int

    /// Takes over `state` and `context` for the step's duration, leaving empty placeholders in
    /// their place until `finish(into:_:)` hands them back.
    ///
    /// Why swap: moving them in with `consume` still made the optimiser copy the whole state,
    /// context and step (a retain and a release of every buffer they hold) on every record;
    /// `swap` exchanges the bytes and touches no reference count. The placeholders are empty
    /// and allocate nothing.
    init(prepared: PreparedProfile, taking state: inout DeliveryState, _ context: inout ProcessingContext) {
        // Same result as `zone.localDateTime(at:)`, with the date memoised per user (see
        // `LocalDayMemo`): consecutive steps nearly always share a local day.
        let (localNow, today) = state.localDayMemo.localDateTime(in: state.zone ?? .utc, at: context.now)
        self.localNow = localNow
        self.today = today
        self.prepared = prepared
        self.state = DeliveryState()
        self.context = ProcessingContext(now: context.now, userId: "", ids: context.ids)
        swap(&self.state, &state)
        swap(&self.context, &context)
    }

    mutating func refreshLocalTime() {
        (localNow, today) = state.localDayMemo.localDateTime(in: zone, at: now)
    }

    /// Ends the step, handing the state and the context back. Caches the next lapse trigger
    /// first (recomputed only when what it depends on changed), so `nextWakeUp` (asked after
    /// every record) needs no zone conversion.
    mutating func finish(into state: inout DeliveryState, _ context: inout ProcessingContext) {
        let inputs = LapseDueMemo.Inputs(self.state)
        if !self.state.lapseDueMemo.holds(inputs, prepared) {
            let memo = self.state.lapseDueMemo.noActionTrigger(for: inputs, prepared)
            let noAction = memo.known ? memo.due : Self.noActionTrigger(self.state, lapse: prepared)
            self.state.lapseDueAt = Self.nextLapseTrigger(self.state, lapse: prepared, noAction: noAction)
            self.state.lapseDueMemo.record(inputs, prepared, noActionDue: noAction)
        }
        swap(&self.state, &state)
        swap(&self.context, &context)
    }

    var profile: PolicyProfile { prepared.profile }
    var now: Timestamp { context.now }
    var userId: String { context.userId }
    /// P-TIME-1: the user's zone, UTC until one is known.
    var zone: Zone { state.zone ?? .utc }

    var quietHours: QuietHoursWindow {
        if let q = state.quietHours { return QuietHoursWindow(start: q.start, end: q.end) }
        return QuietHoursWindow(start: profile.quietHours.start, end: profile.quietHours.end)
    }

    /// Push is impossible: the user switched it off or denied the permission (P-PREF-1).
    var pushBlocked: Bool { !state.pushEnabled || state.notificationsDenied }

    var inQuietMode: Bool { state.lapse.quietSince != nil }
    var isDormant: Bool { state.lapse.hasFired(.dormant) }

    /// Resets the ledger when the local day changed. Callers then read the field they need in
    /// place (`state.day?.delivered ?? 0`: the ledger is there, the default never applies);
    /// returning the `DayLedger` copied its dictionary and arrays (a retain and a release each)
    /// to read one number.
    mutating func openLedger() {
        if state.day?.day != today { state.day = DayLedger(day: today) }
    }

    /// Changes the current local day's ledger (reset first when the day changed) in place,
    /// through optional chaining: its collections stay uniquely referenced, and the ledger is
    /// neither moved out and back nor copied.
    mutating func updateLedger(_ change: (inout DayLedger) -> Void) {
        openLedger()
        state.day?.apply(change)
    }

    /// Local days since sign-up, when it is known (`user_age_days`).
    var userAgeDays: Int? {
        state.signedUpAt.map { zone.localDate(at: $0).days(until: localNow.date) }
    }

    // MARK: Outputs
    //
    // The record's fields are taken `consuming`: each field a record holds needs its own
    // reference, and with borrowed parameters the optimiser retained the fields while building
    // the record, then copied the whole record (a retain of each of them again) and destroyed
    // the first one. Callers now hand over the one reference the record keeps.

    mutating func emitDecision(
        _ intentId: consuming String, _ outcome: DecisionOutcome, reason: consuming String?, rule: consuming String,
        notificationId: consuming String? = nil, until: Timestamp? = nil
    ) {
        let decision = Decision(
            id: context.nextID(), userId: userId, intentId: intentId, outcome: outcome, reason: reason,
            notificationId: notificationId, until: until, rule: rule)
        context.emit(.decision(decision), to: Topics.decisions)
    }

    mutating func emitDelivery(
        _ rendered: consuming RenderedNotification, notificationId: consuming String, category: consuming String,
        channel: DeliveryChannel, merged: consuming [String]
    ) {
        let delivery = Delivery(
            id: context.nextID(), userId: userId, notificationId: notificationId, channel: channel, notification: rendered.type,
            category: category, title: rendered.title, body: rendered.body, deepLink: rendered.deepLink, mergedIntents: merged)
        context.emit(.delivery(delivery), to: Topics.deliveries)
    }

    mutating func emitSection(_ section: consuming String, itemId: consuming String, item: consuming JSONObject, expiresAt: Timestamp?) {
        let record = SectionItem(id: context.nextID(), userId: userId, section: section, itemId: itemId, item: item, expiresAt: expiresAt)
        context.emit(.sectionItem(record), to: Topics.sections)
    }

    mutating func emitEvent(_ event: consuming String, _ properties: consuming JSONObject) {
        let record = RetentionEvent(id: context.nextID(), userId: userId, event: event, properties: properties)
        context.emit(.retentionEvent(record), to: Topics.retentionEvents)
    }

    /// P-EVT-1 `retention.churn_signal_detected`.
    mutating func emitChurnSignal(_ signal: String) {
        var properties: JSONObject = ["signal_type": .string(signal)]
        if let age = userAgeDays { properties["user_age_days"] = .int(Int64(age)) }
        emitEvent("retention.churn_signal_detected", properties)
    }

    // MARK: Housekeeping

    /// Drops memory that no rule can read any more, so state stays bounded.
    ///
    /// It runs on every step, so every test reads one field in place (`state.day?.day`,
    /// `state.recent[0].at`): binding the element or the ledger (`if let day = state.day`)
    /// copied it, a retain and a release of each string and collection in it, to read a number.
    mutating func prune() {
        state.memory.forget(before: now - profile.idempotency.remember)
        let horizon = now - profile.historyHorizon
        if !state.recent.isEmpty, state.recent[0].at < horizon { state.recent.removeAll { $0.at < horizon } }
        let dismissalHorizon = now - profile.cooldown.within
        if !state.dismissals.isEmpty, state.dismissals[0].at < dismissalHorizon {
            state.dismissals.removeAll { $0.at < dismissalHorizon }
        }
        if !state.cooldownUntil.isEmpty { state.cooldownUntil = state.cooldownUntil.filter { $0.value > now } }
        if let day = state.day?.day, day < today { state.day = nil }
        let year = localNow.date.year
        if state.keyedCaps.indices.contains(where: { state.keyedCaps[$0].period != 0 && state.keyedCaps[$0].period < year }) {
            state.keyedCaps.removeAll { $0.period != 0 && $0.period < year }
        }
    }
}

extension PolicyProfile {
    /// How far back delivery history must reach: the longest window a rule reads
    /// (duplicate content, cool-down rate, the quiet-mode allowance, weekly caps, minimum intervals).
    func computeHistoryHorizon() -> TimeSpan {
        // P-LAP-3's quiet-mode allowance counts deliveries of the last `quiet_mode_period_days`.
        var longest = max(duplicateContent.window, cooldown.per, lapse.quietModePeriod)
        for type in catalog.values {
            if type.caps.perWeek != nil { longest = max(longest, .days(7)) }
            if let interval = type.caps.minInterval { longest = max(longest, interval) }
        }
        return longest
    }
}
