import FleetModel

/// Why a candidate is not delivered now.
private struct Verdict {
    var reason: String
    var rule: String
    /// Held back by volume (caps, cool-down, budget): these feed the digest (P-BUD-5).
    var volume = false
}

extension EngineStep {
    /// Decides candidates released at the same instant: rank order, then oldest first (P-BUD-2).
    ///
    /// The candidates are moved, never copied, from the batch through the decision back into
    /// `pending`: a copy retained and released every string and array a candidate holds.
    ///
    /// Each candidate is ranked once, before sorting: a comparator that ranked both sides
    /// looked their types up again at every comparison and captured a copy of the whole step.
    mutating func release(_ batch: consuming [Candidate]) {
        guard batch.count > 1 else {
            if let candidate = batch.popLast(), let stillPending = decide(candidate) { state.pending.append(stillPending) }
            return
        }
        var ranked: [(rank: Int, candidate: Candidate)] = []
        ranked.reserveCapacity(batch.count)
        while let candidate = batch.popLast() { ranked.append((rank(of: candidate), candidate)) }
        // Last in order first, as they are taken from the end. `ranked` holds the batch
        // backwards and the sort is stable, so equal candidates still go in batch order.
        ranked.sort { a, b in
            if a.rank != b.rank { return a.rank > b.rank }
            if a.candidate.firstArrival != b.candidate.firstArrival { return a.candidate.firstArrival > b.candidate.firstArrival }
            return LogOrder.precedes(b.candidate.notificationId, a.candidate.notificationId)
        }
        while let (_, candidate) = ranked.popLast() {
            if let stillPending = decide(candidate) { state.pending.append(stillPending) }
        }
    }

    func rank(of candidate: Candidate) -> Int {
        switch candidate.kind {
        case .intents, .topPending:
            var best = Int.max
            var lookup = CatalogLookup(prepared)
            // By index: `for intent in` copied every intent to read its type.
            for i in candidate.intents.indices {
                if let rank = lookup(candidate.intents[i].type)?.type.rank, rank < best { best = rank }
            }
            return best
        case .digest:
            return profile.catalog[profile.digest.notification]?.rank ?? Int.max
        case .lapsedSummary, .dormantEmail:
            return profile.catalog[profile.lapse.summaryNotification]?.rank ?? Int.max
        case .valueReminder:
            return profile.catalog[profile.lapse.valueReminderNotification]?.rank ?? Int.max
        }
    }

    /// Decides one candidate now. Returns it when it stays pending (deferred).
    private mutating func decide(_ candidate: consuming Candidate) -> Candidate? {
        switch candidate.kind {
        case .intents: return decideIntents(candidate)
        default: return decideGenerated(candidate)
        }
    }

    // MARK: Intents

    private mutating func decideIntents(_ candidate: consuming Candidate) -> Candidate? {
        let wasDeferred = candidate.phase == .deferred
        // Every check over the window's intents reads them by index: `filter`, `allSatisfy` and
        // `for intent in intents` handed each intent over as a copy (a retain and a release of
        // its id, type and data), and nearly always to find nothing.
        // P-EXP-1: whatever reached its expiry while held is suppressed.
        if candidate.intents.indices.contains(where: { candidate.intents[$0].expiresAt.map { $0 <= now } ?? false }) {
            let expired = candidate.intents.filter { ($0.expiresAt.map { $0 <= now }) ?? false }
            candidate.intents.removeAll { ($0.expiresAt.map { $0 <= now }) ?? false }
            settle(expired, .suppressed, Verdict(reason: "expired", rule: "P-EXP-1"), notificationId: nil)
        }
        guard !candidate.intents.isEmpty else { return nil }

        // A replay under another profile may hold types that profile does not know.
        var lookup = CatalogLookup(prepared)
        if candidate.intents.indices.contains(where: { lookup(candidate.intents[$0].type) == nil }) {
            let unknown = candidate.intents.filter { prepared.catalog[$0.type] == nil }
            candidate.intents.removeAll { prepared.catalog[$0.type] == nil }
            settle(unknown, .suppressed, Verdict(reason: "not_in_catalog", rule: "P-CAT-1"), notificationId: nil)
            guard !candidate.intents.isEmpty else { return nil }
        }

        // The primary type is read through its entry, field by field: a local
        // `NotificationType` copied all of its strings and collections once per decision.
        guard let entry = primaryType(of: candidate.intents) else { return nil }
        let typeName = entry.type.name
        // A window nearly always holds one type: then no filtering (and no new arrays) is needed.
        let homogeneous = candidate.intents.indices.allSatisfy { candidate.intents[$0].type == typeName }
        let primary = homogeneous ? candidate.intents : candidate.intents.filter { $0.type == typeName }
        let others = homogeneous ? [] : candidate.intents.filter { $0.type != typeName }

        if let verdict = preferenceVerdict(entry) {
            settle(candidate.intents, .suppressed, verdict, notificationId: nil)
            return nil
        }

        // P-DND-1: deferred to the end of quiet hours, unless the user scheduled it inside them.
        var exemptFromQuietHours = false
        if let end = quietHours.end(containing: now, local: localNow, in: zone) {
            if isUserScheduledInsideQuietHours(entry, primary) {
                exemptFromQuietHours = true
            } else {
                return deferred(candidate, until: end)
            }
        }

        // P-BUD-6 day one.
        if let verdict = dayOneVerdict(entry) {
            settle(candidate.intents, .suppressed, verdict, notificationId: nil)
            return nil
        }

        // Per-key caps drop single intents (a birthday already sent this year), then decide again.
        if let perKey = entry.type.caps.perKey {
            let capped = primary.filter { keyedUses(typeName, perKey, $0) >= perKey.max }
            if !capped.isEmpty {
                candidate.intents.removeAll { intent in capped.contains { $0.id == intent.id } }
                lose(capped, Verdict(reason: "type_cap", rule: "P-BUD-1", volume: true))
                return candidate.intents.isEmpty ? nil : decideIntents(candidate)
            }
        }

        if let verdict = capVerdict(entry) ?? cooldownVerdict(entry) {
            lose(candidate.intents, verdict)
            return nil
        }

        guard let rendered = Renderer.render(entry, primary) else {
            settle(candidate.intents, .suppressed, Verdict(reason: "no_net_change", rule: "P-COAL-1"), notificationId: nil)
            return nil
        }

        // P-DUP-1
        let bodyHash = IdempotencyMemory.hash(rendered.body)
        let dupSince = now - profile.duplicateContent.window
        if state.recent.contains(where: { $0.type == typeName && $0.bodyHash == bodyHash && $0.at > dupSince }) {
            settle(candidate.intents, .suppressed, Verdict(reason: "duplicate_content", rule: "P-DUP-1"), notificationId: nil, rendered: rendered)
            return nil
        }

        if let verdict = budgetVerdict(rank: entry.type.rank) {
            lose(candidate.intents, verdict, rendered: rendered)
            return nil
        }

        // Delivered.
        emitDelivery(rendered, notificationId: candidate.notificationId, category: entry.type.category, channel: .push, merged: candidate.intents.map(\.id))
        let (reason, rule) =
            exemptFromQuietHours ? ("scheduled_by_user", "P-DND-1")
            : wasDeferred ? ("quiet_hours_ended", "P-DND-1") : ("within_budget", "P-BUD-1")
        for i in primary.indices {
            if i == 0 {
                emitDecision(primary[i].id, .delivered, reason: reason, rule: rule, notificationId: candidate.notificationId)
            } else {
                emitDecision(primary[i].id, .merged, reason: "coalesced", rule: "P-COAL-1", notificationId: candidate.notificationId)
            }
        }
        for i in others.indices {
            emitDecision(others[i].id, .merged, reason: "coalesced", rule: "P-COAL-1", notificationId: candidate.notificationId)
        }
        if !others.isEmpty { emitSectionItems(for: others, reason: "merged") }
        recordDelivery(entry, bodyHash: bodyHash)
        if let perKey = entry.type.caps.perKey {
            for intent in primary { useKey(typeName, perKey, intent) }
        }
        return nil
    }

    /// The notification a window delivers: a type that supersedes another present (milestone
    /// over updated), else the lowest rank, then the earliest (P-COAL-1).
    private func primaryType(of intents: [PendingIntent]) -> CatalogEntry? {
        var best: CatalogEntry?
        for i in intents.indices {  // by index: `for intent in intents` copied every intent
            if let current = best, intents[i].type == current.type.name { continue }  // no lookup for the usual case
            guard let entry = prepared.catalog[intents[i].type] else { continue }
            guard let current = best else { best = entry; continue }
            let type = entry.type
            if type.name == current.type.name { continue }
            let beatsBySupersede = type.supersedes.contains(current.type.name) && intents.contains { $0.type == current.type.name }
            let losesBySupersede = current.type.supersedes.contains(type.name)
            if beatsBySupersede || (!losesBySupersede && type.rank < current.type.rank) { best = entry }
        }
        return best
    }

    /// P-PREF-1, P-LAP-3, P-LAP-5 and the weekend pause: the user's own settings and lapse state.
    private func preferenceVerdict(_ entry: CatalogEntry) -> Verdict? {
        if entry.type.userCanDisable && state.disabledCategories.contains(entry.type.category) {
            return Verdict(reason: "category_disabled", rule: "P-PREF-1")
        }
        if entry.type.inAppOnly { return Verdict(reason: "in_app_only", rule: "P-SEC-2") }
        if pushBlocked { return Verdict(reason: "permission_denied", rule: "P-PREF-1") }
        if entry.type.requiresPremium && !state.premium { return Verdict(reason: "not_premium", rule: "P-PREF-1") }
        if isDormant { return Verdict(reason: "dormant", rule: "P-LAP-5") }
        if inQuietMode && !profile.lapse.quietModeAllowedCategories.contains(entry.type.category) {
            return Verdict(reason: "quiet_mode", rule: "P-LAP-3")
        }
        if profile.weekendPause.onByDefault && entry.type.userCanDisable
            && profile.weekendPause.days.contains(localNow.date.isoWeekday)
        {
            return Verdict(reason: "weekend_pause", rule: "P-PROF-1")
        }
        return nil
    }

    /// P-DND-1 exception: every intent carries a user-scheduled local time inside quiet hours.
    private func isUserScheduledInsideQuietHours(_ entry: CatalogEntry, _ intents: [PendingIntent]) -> Bool {
        guard let field = entry.type.quietHoursExemptWhenScheduledIn else { return false }
        return intents.allSatisfy { intent in
            guard let text = intent.data[field]?.stringValue, let local = LocalDateTime(Substring(text)) else { return false }
            return quietHours.contains(local.time)
        }
    }

    private mutating func deferred(_ candidate: consuming Candidate, until end: Timestamp) -> Candidate {
        if candidate.until != end {
            for i in candidate.intents.indices {
                emitDecision(
                    candidate.intents[i].id, .deferred, reason: "quiet_hours", rule: "P-DND-1", notificationId: candidate.notificationId,
                    until: end)
            }
        }
        candidate.phase = .deferred
        candidate.until = end
        // Wake at the earliest expiry too (P-EXP-1 "a deferred intent that reaches its expiry").
        candidate.dueAt = min(end, Self.earliestExpiry(of: candidate.intents) ?? end)
        return candidate
    }

    private mutating func dayOneVerdict(_ entry: CatalogEntry) -> Verdict? {
        guard profile.dayOne.enabled, let signup = state.signedUpAt,
              zone.localDate(at: signup).daysSinceEpoch == today
        else { return nil }
        guard let index = profile.dayOne.limits.firstIndex(where: { $0.types.contains(entry.type.name) }) else {
            return Verdict(reason: "day_one_limit", rule: "P-BUD-6")
        }
        openLedger()
        let used = state.day.map { $0.dayOne.indices.contains(index) ? $0.dayOne[index] : 0 } ?? 0
        return used >= profile.dayOne.limits[index].max ? Verdict(reason: "day_one_limit", rule: "P-BUD-6") : nil
    }

    /// §1 "own cap" and the FitCircle frequency caps.
    private mutating func capVerdict(_ entry: CatalogEntry) -> Verdict? {
        let caps = entry.type.caps
        let name = entry.type.name
        let capped = Verdict(reason: "type_cap", rule: "P-BUD-1", volume: true)
        if let perDay = caps.perDay {
            openLedger()
            if (state.day?.byType.value(forKey: name) ?? 0) >= perDay { return capped }
        }
        if let perWeek = caps.perWeek {
            let since = now - .days(7)
            if state.recent.count(where: { $0.type == name && $0.at > since }) >= perWeek { return capped }
        }
        if let interval = caps.minInterval {
            let since = now - interval
            if state.recent.contains(where: { $0.type == name && $0.at > since }) { return capped }
        }
        if let total = caps.total, (state.lifetime[name] ?? 0) >= total { return capped }
        if let days = caps.withinDaysOfSignup, (userAgeDays ?? Int.max) >= days { return capped }
        return nil
    }

    /// P-COOL-1: at most `max_deliveries` per `per` *while in cool-down*. The deliveries the user
    /// dismissed into it came before it began and do not count, or the cool-down would hold
    /// back even its one allowed delivery until the last of them was `per` old. It began
    /// `duration` before it ends (the state keeps only the end).
    private func cooldownVerdict(_ entry: CatalogEntry) -> Verdict? {
        let category = entry.type.category
        guard !entry.category.cooldownExempt, let until = state.cooldownUntil.value(forKey: category), until > now else {
            return nil
        }
        let windowStart = now - profile.cooldown.per
        let began = until - profile.cooldown.duration
        let recent = state.recent.count {
            $0.at > windowStart && $0.at >= began && prepared.catalog[$0.type]?.type.category == category
        }
        return recent >= profile.cooldown.maxDeliveries ? Verdict(reason: "category_cooldown", rule: "P-COOL-1", volume: true) : nil
    }

    /// P-BUD-1 and the last-slot reservation P-BUD-3.
    private mutating func budgetVerdict(rank: Int) -> Verdict? {
        openLedger()
        let remaining = profile.budget.dailyLimit - (state.day?.delivered ?? 0)
        if remaining <= 0 { return Verdict(reason: "daily_budget", rule: "P-BUD-1", volume: true) }
        if remaining == 1, let excluded = profile.budget.lastSlotExcludedFromRank, rank >= excluded {
            return Verdict(reason: "budget_reserved", rule: "P-BUD-3", volume: true)
        }
        return nil
    }

    // MARK: Per-key caps

    private func keyPeriod(_ period: PolicyProfile.Caps.PerKey.Period) -> Int {
        period == .year ? localNow.date.year : 0
    }

    private func keyHash(_ perKey: PolicyProfile.Caps.PerKey, _ intent: PendingIntent) -> UInt64 {
        IdempotencyMemory.hash(intent.data[perKey.field].flatMap(Self.scalarText) ?? "")
    }

    private func keyedUses(_ type: String, _ perKey: PolicyProfile.Caps.PerKey, _ intent: PendingIntent) -> Int {
        let hash = keyHash(perKey, intent), period = keyPeriod(perKey.period)
        return state.keyedCaps.first { $0.type == type && $0.keyHash == hash && $0.period == period }?.count ?? 0
    }

    private mutating func useKey(_ type: String, _ perKey: PolicyProfile.Caps.PerKey, _ intent: PendingIntent) {
        let hash = keyHash(perKey, intent), period = keyPeriod(perKey.period)
        if let i = state.keyedCaps.firstIndex(where: { $0.type == type && $0.keyHash == hash && $0.period == period }) {
            state.keyedCaps[i].count += 1
        } else {
            state.keyedCaps.append(KeyedCap(type: type, keyHash: hash, period: period, count: 1))
        }
    }

    // MARK: Outcomes

    /// Final decisions for `intents` that were not delivered, with their section items.
    /// `rendered`: the primary type's copy, when the caller already rendered it.
    private mutating func settle(
        _ intents: [PendingIntent], _ outcome: DecisionOutcome, _ verdict: Verdict, notificationId: String?,
        rendered: RenderedNotification? = nil
    ) {
        for i in intents.indices {
            emitDecision(intents[i].id, outcome, reason: verdict.reason, rule: verdict.rule, notificationId: notificationId)
        }
        emitSectionItems(for: intents, reason: verdict.reason, rendered: rendered)
        rememberTopPending(intents)
    }

    /// Held back by volume: into the digest once the day crossed its threshold (P-BUD-5),
    /// otherwise suppressed and remembered for a digest later that day.
    private mutating func lose(_ intents: [PendingIntent], _ verdict: Verdict, rendered: RenderedNotification? = nil) {
        openLedger()
        if (state.day?.candidates ?? 0) > profile.digest.whenCandidatesExceed {
            let digestId = addToDigest(intents.map(\.id))
            settle(intents, .digested, Verdict(reason: verdict.reason, rule: "P-BUD-5"), notificationId: digestId, rendered: rendered)
        } else {
            updateLedger { $0.heldBack += intents.map(\.id) }
            settle(intents, .suppressed, verdict, notificationId: nil, rendered: rendered)
        }
    }

    /// The quiet-week `top_pending` choice: the most important intent held back since the last open.
    ///
    /// The earliest of the most important wins; an intent replaces the one remembered only when
    /// it is strictly more important or older, and one whose type the profile no longer knows
    /// is replaced by any. Decided on (rank, arrival) pairs first and stored once: reading and
    /// writing `state.topPending` per intent copied a remembered intent each time.
    private mutating func rememberTopPending(_ intents: [PendingIntent]) {
        var lookup = CatalogLookup(prepared)
        var best: (rank: Int, arrivedAt: Timestamp)?
        if let current = state.topPending, let entry = lookup(current.type) { best = (entry.type.rank, current.arrivedAt) }
        var chosen: Int?
        // By index: `for intent in intents` copied every intent (its strings and data) to read
        // two fields of it.
        for i in intents.indices {
            guard let entry = lookup(intents[i].type), !entry.type.inAppOnly else { continue }
            let key = (rank: entry.type.rank, arrivedAt: intents[i].arrivedAt)
            if let best, best <= key { continue }
            best = key
            chosen = i
        }
        if let chosen { state.topPending = intents[chosen] }
    }

    /// Bookkeeping for a delivered non-security push: budget, caps, cool-down, duplicates.
    mutating func recordDelivery(_ entry: CatalogEntry, bodyHash: UInt64) {
        let name = entry.type.name
        let dayOneIndex = profile.dayOne.limits.firstIndex { $0.types.contains(name) }
        let limits = profile.dayOne.limits.count
        updateLedger { l in
            l.delivered += 1
            // A day's first delivery makes room for a few types at once: inserting into the
            // empty dictionary allocated a one-slot table and the next type rehashed it into a
            // new one. The encodings write the types sorted, so the table's size is not seen.
            // (A new table, not `reserveCapacity`: that is an unspecialised generic call.)
            if l.byType.isEmpty { l.byType = Dictionary(minimumCapacity: 4) }
            l.byType[name, default: 0] += 1
            if let dayOneIndex {
                // Appended in place: `+= Array(repeating:count:)` allocated the zeros first.
                if l.dayOne.count < limits { l.dayOne.append(contentsOf: repeatElement(0, count: limits - l.dayOne.count)) }
                l.dayOne[dayOneIndex] += 1
            }
        }
        state.recent.append(RecentDelivery(type: name, at: now, bodyHash: bodyHash))
        if entry.type.caps.total != nil { state.lifetime[name, default: 0] += 1 }
        state.lastDeliveredCategory = entry.type.category
    }
}
