import FleetModel

/// Notifications the engine makes itself: the digest (P-BUD-5), the lapse tiers (P-LAP-2/3/4)
/// and the dormant email (P-LAP-5).
///
/// They have no intent, so they get decision records of their own (`kind`, no `intent_id`): a
/// deferral for each new end of quiet hours, then one final decision. Without them a rule that
/// stopped one left no trace, and an intent's `digested` decision named a notification nobody
/// could follow.
extension EngineStep {
    /// Adds `ids` to the digest of the current period, creating it (and folding in what was
    /// held back earlier that day) if needed. Returns the digest's notification id.
    mutating func addToDigest(_ ids: [String]) -> String {
        let due = digestDue()
        // By index: the predicate of `firstIndex(where:)` received a copy of every candidate it
        // looked at (a retain and a release of each of its strings and arrays).
        for i in state.pending.indices
        where state.pending[i].kind == .digest && state.pending[i].phase == .scheduled && state.pending[i].dueAt == due {
            state.pending[i].summarised += ids
            return state.pending[i].notificationId
        }
        var digest = Candidate(
            kind: .digest, phase: .scheduled, category: profile.catalog[profile.digest.notification]?.category ?? "",
            notificationId: context.nextID(), firstArrival: now, dueAt: due)
        var heldBack: [String] = []
        updateLedger { l in
            heldBack = l.heldBack
            l.heldBack = []
        }
        digest.summarised = heldBack + ids
        state.pending.append(digest)
        return digest.notificationId
    }

    /// The next digest time: the next local day at `digest.time`, or the next `weekday` at it.
    private func digestDue() -> Timestamp {
        let date = localNow.date
        switch profile.digest.schedule {
        case .nextDay:
            return zone.instant(for: LocalDateTime(date: date.adding(days: 1), time: profile.digest.time))
        case .weekly(let weekday):
            var day = date.adding(days: (weekday - date.isoWeekday + 7) % 7)
            var due = zone.instant(for: LocalDateTime(date: day, time: profile.digest.time))
            if due <= now {
                day = day.adding(days: 7)
                due = zone.instant(for: LocalDateTime(date: day, time: profile.digest.time))
            }
            return due
        }
    }

    /// Schedules a tier notification to be decided now (it competes with anything released at
    /// the same instant).
    mutating func scheduleGenerated(_ kind: Candidate.Kind, category: String, intents: [PendingIntent] = []) {
        var candidate = Candidate(kind: kind, phase: .scheduled, category: category, notificationId: context.nextID(), firstArrival: now, dueAt: now)
        candidate.intents = intents
        state.pending.append(candidate)
    }

    /// Decides an engine-made notification now, writing its decision. Returns it when it stays
    /// pending (deferred to the end of quiet hours).
    mutating func decideGenerated(_ candidate: consuming Candidate) -> Candidate? {
        let wasDeferred = candidate.phase == .deferred
        let email = candidate.kind == .dormantEmail
        if email {
            if !state.emailOptIn { return settleGenerated(candidate, .suppressed, "email_not_opted_in", "P-LAP-5") }
        } else {
            // P-PREF-1; the user's own switch and the OS permission are told apart, as the
            // operator's fix differs.
            if !state.pushEnabled { return settleGenerated(candidate, .suppressed, "push_disabled", "P-PREF-1") }
            if state.notificationsDenied { return settleGenerated(candidate, .suppressed, "permission_denied", "P-PREF-1") }
            // P-LAP-5: no push at all once dormant (a value reminder of the no-action trigger included).
            if isDormant { return settleGenerated(candidate, .suppressed, "dormant", "P-LAP-5") }
        }
        // P-LAP-3: in quiet mode the only kinds allowed are the tier notifications.
        if candidate.kind == .digest && inQuietMode { return settleGenerated(candidate, .suppressed, "quiet_mode", "P-LAP-3") }
        if !email, let end = quietHours.end(containing: now, local: localNow, in: zone) {
            if candidate.until != end {
                emitGeneratedDecision(candidate, .deferred, reason: "quiet_hours", rule: "P-DND-1", until: end)
            }
            candidate.phase = .deferred
            candidate.until = end
            candidate.dueAt = end
            return candidate
        }
        // What it would say is read only now, at its time: intents that arrive while it waits
        // out quiet hours count in a summary.
        let entry: CatalogEntry, rendered: RenderedNotification
        switch renderGenerated(candidate) {
        case .rendered(let e, let r): (entry, rendered) = (e, r)
        case .nothingToSay(let reason, let rule): return settleGenerated(candidate, .skipped, reason, rule)
        case .notInCatalog: return settleGenerated(candidate, .suppressed, "not_in_catalog", "P-CAT-1")
        case .noCopy: return settleGenerated(candidate, .suppressed, "no_copy", "P-PROF-1")
        }
        if candidate.kind != .digest && inQuietMode && quietWeekIsUsed() {  // every channel
            return settleGenerated(candidate, .suppressed, "quiet_week_used", "P-LAP-3")
        }
        // P-BUD-1; a digest's items stay in the smart sections they went to when digested (P-BUD-4).
        openLedger()
        if profile.budget.dailyLimit - (state.day?.delivered ?? 0) <= 0 {
            return settleGenerated(candidate, .suppressed, "daily_budget", "P-BUD-1")
        }
        emitDelivery(
            rendered, notificationId: candidate.notificationId, category: entry.type.category, channel: email ? .email : .push,
            merged: candidate.kind == .digest ? candidate.summarised : candidate.intents.map(\.id))
        let (reason, rule) = wasDeferred ? ("quiet_hours_ended", "P-DND-1") : ("within_budget", "P-BUD-1")
        emitGeneratedDecision(candidate, .delivered, reason: reason, rule: rule)
        recordDelivery(entry, bodyHash: IdempotencyMemory.hash(rendered.body))
        switch candidate.kind {
        case .lapsedSummary, .topPending:
            state.lapse.tierNotificationId = candidate.notificationId
            state.lapse.tierKind = "14d_summary"
        case .valueReminder:
            state.lapse.tierNotificationId = candidate.notificationId
            state.lapse.tierKind = "30d_reminder"
            state.lapse.valueReminderAt = now
        default:
            break
        }
        if inQuietMode { state.lapse.lastQuietNotificationAt = now }
        return nil
    }

    /// The final decision of a generated notification that is not delivered; it is no longer pending.
    private mutating func settleGenerated(_ candidate: Candidate, _ outcome: DecisionOutcome, _ reason: String, _ rule: String) -> Candidate? {
        emitGeneratedDecision(candidate, outcome, reason: reason, rule: rule)
        return nil
    }

    /// P-BUD-5 ("skipped if the user opened the app since") and P-LAP-6 (an open ends the
    /// lapse): the engine-made notifications an open makes pointless, each with its decision.
    mutating func skipPendingOnOpen() {
        guard state.pending.contains(where: { $0.kind.isSkippedOnOpen }) else { return }
        for candidate in state.pending where candidate.kind.isSkippedOnOpen {
            emitGeneratedDecision(candidate, .skipped, reason: "opened_since", rule: candidate.kind == .digest ? "P-BUD-5" : "P-LAP-6")
        }
        state.pending.removeAll { $0.kind.isSkippedOnOpen }
    }

    private mutating func emitGeneratedDecision(
        _ candidate: Candidate, _ outcome: DecisionOutcome, reason: String, rule: String, until: Timestamp? = nil
    ) {
        guard let kind = candidate.kind.engineNotificationKind else { return }
        let decision = Decision(
            id: context.nextID(), userId: userId, kind: kind, notificationId: candidate.notificationId, outcome: outcome,
            reason: reason, until: until, rule: rule)
        context.emit(.decision(decision), to: Topics.decisions)
    }

    /// P-LAP-3: at most `quiet_mode_max_notifications` non-allowed-category notifications per
    /// `quiet_mode_period_days` *while in quiet mode*: deliveries from before it began (the
    /// week before a user lapsed) do not use the allowance, or the 14-day summary of a user who
    /// got anything in the last days before quiet mode would be lost.
    private func quietWeekIsUsed() -> Bool {
        guard let quietSince = state.lapse.quietSince else { return false }
        let windowStart = now - profile.lapse.quietModePeriod
        let allowed = profile.lapse.quietModeAllowedCategories
        let used = state.recent.count { delivery in
            guard delivery.at > windowStart, delivery.at >= quietSince, let type = prepared.catalog[delivery.type]?.type else {
                return false
            }
            return !type.alwaysDeliver && !allowed.contains(type.category)
        }
        return used >= profile.lapse.quietModeMaxNotifications
    }

    private enum GeneratedCopy {
        case rendered(CatalogEntry, RenderedNotification)
        /// Nothing (left) to say: skipped, with the reason and the rule that says so.
        case nothingToSay(reason: String, rule: String)
        /// A replay under another profile whose catalog lacks the type.
        case notInCatalog
        /// The profile has no copy for the variant needed.
        case noCopy
    }

    private func renderGenerated(_ candidate: Candidate) -> GeneratedCopy {
        let totals = state.sinceOpen
        func copy(_ entry: CatalogEntry, _ rendered: RenderedNotification?) -> GeneratedCopy {
            rendered.map { .rendered(entry, $0) } ?? .noCopy
        }
        switch candidate.kind {
        case .digest:
            guard let entry = prepared.catalog[profile.digest.notification] else { return .notInCatalog }
            guard !candidate.summarised.isEmpty else { return .nothingToSay(reason: "nothing_to_summarise", rule: "P-BUD-5") }
            return copy(entry, Renderer.renderGenerated(entry, variant: "one", values: ["count": String(candidate.summarised.count)]))
        case .lapsedSummary, .dormantEmail:
            guard let entry = prepared.catalog[profile.lapse.summaryNotification] else { return .notInCatalog }
            // "If nothing changed, nothing appears" (§5.4).
            guard totals.enrichment + totals.dedup > 0 else {
                return .nothingToSay(reason: "nothing_accumulated", rule: candidate.kind == .dormantEmail ? "P-LAP-5" : "P-LAP-2")
            }
            var values = ["enrichments": String(totals.enrichment), "dedups": String(totals.dedup)]
            var variant = "without_score"
            if let score = state.lastScore {
                values["score"] = String(score)
                variant = "one"
            }
            return copy(entry, Renderer.renderGenerated(entry, variant: variant, values: values))
        case .valueReminder:
            guard let entry = prepared.catalog[profile.lapse.valueReminderNotification] else { return .notInCatalog }
            guard totals.enrichment > 0 else { return .nothingToSay(reason: "no_new_enrichments", rule: "P-LAP-4") }
            return copy(entry, Renderer.renderGenerated(entry, variant: "one", values: ["enrichments": String(totals.enrichment)]))
        case .topPending:
            guard let intent = candidate.intents.first else { return .nothingToSay(reason: "nothing_pending", rule: "P-LAP-3") }
            guard let entry = prepared.catalog[intent.type] else { return .notInCatalog }
            guard let rendered = Renderer.render(entry, [intent]) else { return .nothingToSay(reason: "no_net_change", rule: "P-COAL-1") }
            return .rendered(entry, rendered)
        case .intents:
            return .notInCatalog  // not reached: `decide` hands intents to `decideIntents`
        }
    }
}

extension Candidate.Kind {
    /// The `kind` of this candidate's decision records; nil for intents, whose decisions name them.
    var engineNotificationKind: EngineNotificationKind? {
        switch self {
        case .intents: nil
        case .digest: .digest
        case .lapsedSummary: .lapsedSummary
        case .topPending: .topPending
        case .valueReminder: .valueReminder
        case .dormantEmail: .dormantEmail
        }
    }

    /// Made pointless by an open (P-BUD-5, P-LAP-6); a value reminder is not: it is also due to
    /// users who open the app but take no action (§9.1).
    var isSkippedOnOpen: Bool {
        switch self {
        case .digest, .lapsedSummary, .topPending, .dormantEmail: true
        case .intents, .valueReminder: false
        }
    }
}
