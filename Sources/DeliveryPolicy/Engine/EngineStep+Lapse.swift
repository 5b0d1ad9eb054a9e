import FleetModel

/// An inactivity tier (§7) or the "no intentional action" trigger (§9.1), due at the start of
/// a local day.
enum LapseTrigger: Int, Sendable {
    case quietMode, valueReminder, dormant, noAction
}

extension EngineStep {
    // MARK: Opens

    /// P-LAP-6 (lapse ends), P-WB-1/2 (welcome back, totals reset), P-EVT-2 (streak),
    /// P-BUD-5 (a pending digest is skipped once the user opened the app).
    mutating func appOpened(_ open: AppOpened) {
        let todayDate = localNow.date
        let daysAway = state.lastOpenAt.map { zone.localDate(at: $0).days(until: todayDate) }

        if let since = state.lapse.quietSince {
            emitEvent("retention.quiet_mode_exited", ["days_in_quiet_mode": .int(Int64(zone.localDate(at: since).days(until: todayDate)))])
            var kind = "organic"
            if open.entrySource == .notification, let id = open.notificationId, id == state.lapse.tierNotificationId,
               let tierKind = state.lapse.tierKind
            {
                kind = tierKind
            }
            emitEvent("retention.lapsed_reengaged", [
                "days_inactive": .int(Int64(daysAway ?? 0)),
                "reengagement_type": .string(kind),
                "entry_source": .string(open.entrySource.rawValue),
            ])
        }

        if let daysAway, daysAway >= profile.welcomeBack.afterDays { emitWelcomeBack(daysAway: daysAway, today: todayDate) }

        let streak = updatedStreak(today: todayDate.daysSinceEpoch)
        state.streak = streak
        let entrySource = JSONValue.string(open.entrySource.rawValue), isLapsed = JSONValue.bool((daysAway ?? 0) >= profile.lapse.quietModeDays)
        let current = JSONValue.int(Int64(streak.current)), longest = JSONValue.int(Int64(streak.longest))
        let properties =
            if let daysAway {
                Self.appOpenedAgainProperties.make(entrySource, isLapsed, current, longest, .int(Int64(daysAway)))
            } else {
                Self.appOpenedProperties.make(entrySource, isLapsed, current, longest)
            }
        emitEvent("retention.app_opened", properties)

        state.sinceOpen = SinceOpenTotals()
        state.topPending = nil
        let noAction = state.lapse.noActionFired
        state.lapse = LapseState()
        state.lapse.noActionFired = noAction
        skipPendingOnOpen()
        state.lastOpenAt = now
    }

    /// `retention.app_opened`'s properties at a first open.
    private static let appOpenedProperties = JSONObjectTemplate(keys: ["entry_source", "is_lapsed", "streak_current", "streak_longest"])
    /// `retention.app_opened`'s properties at every later open, with `days_since_last_open`: a
    /// template of its own, because adding the key to an object made from the first one hashed
    /// it and grew the object's table (a second allocation).
    private static let appOpenedAgainProperties = JSONObjectTemplate(
        keys: ["entry_source", "is_lapsed", "streak_current", "streak_longest", "days_since_last_open"])

    /// P-EVT-2: same day no change, next day +1, a gap resets to 1.
    private func updatedStreak(today: Int) -> Streak {
        guard var streak = state.streak else { return Streak(current: 1, longest: 1, lastDay: today) }
        if today == streak.lastDay + 1 {
            streak.current += 1
        } else if today > streak.lastDay + 1 {
            streak.current = 1
        } else {
            return streak  // same day (or a zone change moved the calendar back)
        }
        streak.lastDay = today
        streak.longest = max(streak.longest, streak.current)
        return streak
    }

    /// P-WB-1: non-zero lines in profile order, at most `max_lines`, then "and {n} more updates".
    private mutating func emitWelcomeBack(daysAway: Int, today todayDate: CivilDate) {
        let totals = state.sinceOpen
        var lines: [(text: String, count: Int)] = []
        for (line, template) in profile.welcomeBack.lines {
            let count: Int
            switch line {
            case .score:
                guard let old = totals.scoreOld, let new = totals.scoreNew, old != new else { continue }
                let delta = new - old
                lines.append((template.render(["old": String(old), "new": String(new), "delta": delta > 0 ? "+\(delta)" : String(delta)]), 1))
                continue
            case .dedup: count = totals.dedup
            case .access: count = totals.access
            case .enrichment: count = totals.enrichment
            case .birthdays:
                let weekStart = todayDate.daysSinceEpoch - 6
                count = totals.birthdayDays.count { $0 >= weekStart }
            case .reminders: count = totals.reminders
            case .newContacts: count = totals.newContacts
            }
            if count > 0 { lines.append((template.render(["count": String(count)]), count)) }
        }
        guard !lines.isEmpty else { return }  // no card when nothing changed
        let limit = profile.welcomeBack.maxLines
        var shown = lines.prefix(limit).map { JSONValue.string($0.text) }
        if lines.count > limit {
            let more = lines.dropFirst(limit).reduce(0) { $0 + $1.count }
            shown.append(.string(profile.welcomeBack.more.render(["count": String(more)])))
        }
        emitSection("welcome_back", itemId: "welcome_back", item: [
            "title": .string(profile.welcomeBack.title),
            "lines": .array(shown),
            "days_since_last_open": .int(Int64(daysAway)),
        ], expiresAt: now + profile.welcomeBack.expiresAfter)
    }

    // MARK: Tiers

    /// Every lapse trigger not yet fired, with the instant it is due.
    static func lapseTriggers(_ state: DeliveryState, lapse prepared: PreparedProfile) -> [(at: Timestamp, trigger: LapseTrigger)] {
        var out: [(at: Timestamp, trigger: LapseTrigger)] = []
        if let tier = tierTrigger(state, lapse: prepared) { out.append(tier) }
        if let at = noActionTrigger(state, lapse: prepared) { out.append((at, .noAction)) }
        return out
    }

    /// The earliest of `lapseTriggers`, without building the list (asked at the end of every step).
    /// `noAction` is the state's `noActionTrigger`, which `finish` reuses from `LapseDueMemo`
    /// when only the last open changed.
    static func nextLapseTrigger(_ state: DeliveryState, lapse prepared: PreparedProfile, noAction: Timestamp?) -> Timestamp? {
        let tier = tierTrigger(state, lapse: prepared)?.at
        guard let tier else { return noAction }
        guard let noAction else { return tier }
        return min(tier, noAction)
    }

    /// The next §7 inactivity tier not yet fired, counted from the last open.
    private static func tierTrigger(_ state: DeliveryState, lapse prepared: PreparedProfile) -> (at: Timestamp, trigger: LapseTrigger)? {
        guard let lastOpen = state.lastOpenAt else { return nil }
        let zone = state.zone ?? .utc
        let openDay = zone.localDate(at: lastOpen)
        let lapse = prepared.profile.lapse
        if !state.lapse.hasFired(.quietMode) {
            return (zone.startOfDay(openDay.adding(days: lapse.quietModeDays)), .quietMode)
        } else if !state.lapse.hasFired(.valueReminder) {
            return (zone.startOfDay(openDay.adding(days: lapse.valueReminderDays)), .valueReminder)
        } else if !state.lapse.hasFired(.dormant) {
            return (zone.startOfDay(openDay.adding(days: lapse.dormantDays)), .dormant)
        }
        return nil
    }

    /// §9.1: the day "no intentional action" is due, unless already handled for this gap.
    static func noActionTrigger(_ state: DeliveryState, lapse prepared: PreparedProfile) -> Timestamp? {
        guard !state.lapse.noActionFired, let lastAction = state.lastActionAt else { return nil }
        let zone = state.zone ?? .utc
        let day = zone.localDate(at: lastAction).adding(days: prepared.profile.lapse.noActionDays)
        return zone.startOfDay(day)
    }

    /// Fires every lapse trigger due by now, in time order.
    mutating func fireLapseTriggers() {
        guard let due = state.lapseDueAt, due <= now else { return }
        while let next = Self.lapseTriggers(state, lapse: prepared).filter({ $0.at <= now }).min(by: { ($0.at, $0.trigger.rawValue) < ($1.at, $1.trigger.rawValue) }) {
            fire(next.trigger)
        }
    }

    private mutating func fire(_ trigger: LapseTrigger) {
        let lapse = profile.lapse
        switch trigger {
        case .quietMode:
            // P-LAP-2: quiet mode, churn signal, and one summary (or the top pending notification).
            state.lapse.mark(.quietMode)
            state.lapse.quietSince = now
            let daysInactive = state.lastOpenAt.map { zone.localDate(at: $0).days(until: localNow.date) } ?? lapse.quietModeDays
            emitEvent("retention.quiet_mode_entered", [
                "days_inactive": .int(Int64(daysInactive)),
                "last_notification_category": state.lastDeliveredCategory.map(JSONValue.string) ?? .null,
            ])
            emitChurnSignal("14d_inactive")
            if lapse.quietWeekChoice == .topPending, let top = state.topPending, let type = profile.catalog[top.type] {
                scheduleGenerated(.topPending, category: type.category, intents: [top])
                state.topPending = nil
            } else {
                scheduleGenerated(.lapsedSummary, category: profile.catalog[lapse.summaryNotification]?.category ?? "")
            }
        case .valueReminder:
            state.lapse.mark(.valueReminder)
            scheduleValueReminder()
        case .dormant:
            // P-LAP-5: no push from here on; one email to users who opted in.
            state.lapse.mark(.dormant)
            // Scheduled without the opt-in too, so its decision says why no email went out.
            if lapse.dormantEmail {
                scheduleGenerated(.dormantEmail, category: profile.catalog[lapse.summaryNotification]?.category ?? "")
            }
        case .noAction:
            // P-LAP-4 §9.1: no intentional action for 30 days, even while opening the app.
            state.lapse.noActionFired = true
            emitChurnSignal("no_action_30d")
            scheduleValueReminder()
        }
    }

    /// One value reminder, even when the 30-day tier and the no-action trigger coincide.
    private mutating func scheduleValueReminder() {
        if state.pending.contains(where: { $0.kind == .valueReminder }) { return }
        if let sent = state.lapse.valueReminderAt, now - sent < profile.lapse.quietModePeriod { return }
        scheduleGenerated(.valueReminder, category: profile.catalog[profile.lapse.valueReminderNotification]?.category ?? "")
    }

    // MARK: Timers

    /// Fires everything due by `now`: lapse triggers, then candidates in time order, those
    /// due at the same instant competing (P-BUD-2).
    mutating func fireDueTimers() {
        prune()
        fireLapseTriggers()
        while let first = Self.earliestPending(state), first <= now {
            release(takePending(dueAt: first))
        }
    }

    /// The earliest `dueAt` of the pending candidates (a loop: `map(\.dueAt).min()` built an array).
    private static func earliestPending(_ state: DeliveryState) -> Timestamp? {
        var earliest: Timestamp?
        for i in state.pending.indices where earliest.map({ state.pending[i].dueAt < $0 }) ?? true {
            earliest = state.pending[i].dueAt
        }
        return earliest
    }

    /// Moves the candidates due at `due` out of `pending`, in order, keeping the others in order.
    ///
    /// Why moved: filtering copied each due candidate (a retain of every string and array it
    /// holds) and removing it released them again. Usually every pending candidate is due, and
    /// then the whole array is handed over.
    ///
    /// The due ones are counted by index (`allSatisfy` handed its predicate a copy of each
    /// candidate), both halves get their exact room at once (appending grew them one doubling
    /// at a time), and they are put back in order through their buffers: `Array.reverse()`
    /// swaps through copies of the elements, a buffer's `reverse()` moves their bytes.
    private mutating func takePending(dueAt due: Timestamp) -> [Candidate] {
        var pending: [Candidate] = []
        swap(&pending, &state.pending)
        var dueCount = 0
        for i in pending.indices where pending[i].dueAt == due { dueCount += 1 }
        if dueCount == pending.count { return pending }
        var batch: [Candidate] = []
        batch.reserveCapacity(dueCount)
        state.pending.reserveCapacity(pending.count - dueCount)
        while let candidate = pending.popLast() {
            if candidate.dueAt == due { batch.append(candidate) } else { state.pending.append(candidate) }
        }
        batch.withUnsafeMutableBufferPointer { $0.reverse() }
        state.pending.withUnsafeMutableBufferPointer { $0.reverse() }
        return batch
    }

    static func nextWakeUp(_ state: DeliveryState, profile: PolicyProfile) -> Timestamp? {
        let pending = state.pending.lazy.map(\.dueAt).min()
        let lapse = state.lapseDueAt
        switch (pending, lapse) {
        case let (p?, l?): return min(p, l)
        case let (p?, nil): return p
        case let (nil, l?): return l
        case (nil, nil): return nil
        }
    }
}
