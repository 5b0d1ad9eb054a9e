import FleetModel

/// Notifications the engine makes itself: the digest (P-BUD-5) and the lapse tiers (P-LAP-2/4/5).
/// They have no intent, so no decision records; when a rule stops them they are simply not sent.
extension EngineStep {
    /// Adds `ids` to the digest of the current period, creating it (and folding in what was
    /// held back earlier that day) if needed. Returns the digest's notification id.
    mutating func addToDigest(_ ids: [String]) -> String {
        let due = digestDue()
        if let i = state.pending.firstIndex(where: { $0.kind == .digest && $0.phase == .scheduled && $0.dueAt == due }) {
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

    mutating func decideGenerated(_ original: Candidate) -> Candidate? {
        var candidate = original
        let email = candidate.kind == .dormantEmail
        if email ? !state.emailOptIn : pushBlocked { return nil }
        if candidate.kind == .digest && (inQuietMode || isDormant) { return nil }
        if !email, let end = quietHours.end(containing: now, local: localNow, in: zone) {
            candidate.phase = .deferred
            candidate.until = end
            candidate.dueAt = end
            return candidate
        }
        if candidate.kind != .digest && inQuietMode && quietWeekIsUsed() { return nil }  // P-LAP-3, every channel
        if profile.budget.dailyLimit - ledger().delivered <= 0 { return nil }
        guard let generated = renderGenerated(candidate) else { return nil }
        let (type, rendered) = generated
        emitDelivery(
            rendered, notificationId: candidate.notificationId, category: type.category, channel: email ? .email : .push,
            merged: candidate.kind == .digest ? candidate.summarised : candidate.intents.map(\.id))
        recordDelivery(type, bodyHash: IdempotencyMemory.hash(rendered.body))
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

    /// P-LAP-3: at most `quiet_mode_max_notifications` non-allowed-category notifications per
    /// `quiet_mode_period_days` while in quiet mode.
    private func quietWeekIsUsed() -> Bool {
        let since = now - profile.lapse.quietModePeriod
        let allowed = profile.lapse.quietModeAllowedCategories
        let used = state.recent.count { delivery in
            guard delivery.at > since, let type = prepared.catalog[delivery.type]?.type else { return false }
            return !type.alwaysDeliver && !allowed.contains(type.category)
        }
        return used >= profile.lapse.quietModeMaxNotifications
    }

    private func renderGenerated(_ candidate: Candidate) -> (PolicyProfile.NotificationType, RenderedNotification)? {
        let totals = state.sinceOpen
        switch candidate.kind {
        case .digest:
            guard !candidate.summarised.isEmpty, let type = profile.catalog[profile.digest.notification],
                  let rendered = Renderer.renderGenerated(type, variant: "one", values: ["count": String(candidate.summarised.count)])
            else { return nil }
            return (type, rendered)
        case .lapsedSummary, .dormantEmail:
            // "If nothing changed, nothing appears" (§5.4).
            guard totals.enrichment + totals.dedup > 0, let type = profile.catalog[profile.lapse.summaryNotification] else { return nil }
            var values = ["enrichments": String(totals.enrichment), "dedups": String(totals.dedup)]
            var variant = "without_score"
            if let score = state.lastScore {
                values["score"] = String(score)
                variant = "one"
            }
            return Renderer.renderGenerated(type, variant: variant, values: values).map { (type, $0) }
        case .valueReminder:
            guard totals.enrichment > 0, let type = profile.catalog[profile.lapse.valueReminderNotification] else { return nil }
            return Renderer.renderGenerated(type, variant: "one", values: ["enrichments": String(totals.enrichment)]).map { (type, $0) }
        case .topPending:
            guard let intent = candidate.intents.first, let type = profile.catalog[intent.type] else { return nil }
            return Renderer.render(type, [intent]).map { (type, $0) }
        case .intents:
            return nil
        }
    }
}
