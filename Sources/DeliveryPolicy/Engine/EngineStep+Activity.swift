import FleetModel

/// Forwarded `rin.app.activity` records and the upstream section items and events that pass
/// through the delivery worker.
extension EngineStep {
    /// `idHash` is `IdempotencyMemory.hash` of `record.id`, computed by the caller.
    mutating func recordArrived(_ record: FleetRecord, idHash: UInt64) {
        prune()
        state.memory.remember(hash: idHash, at: now)  // P-IDEM-1
        switch record {
        case .sectionItem(let item): passThrough(item)
        case .retentionEvent(let event): passThrough(event)
        case .userSignedUp(let signup): signedUp(signup)
        case .appOpened(let open): appOpened(open)
        case .notificationOpened(let interaction):
            // P-COOL-1 counts dismissals "without opening any of them".
            let category = interaction.category.uppercased()
            state.dismissals.removeAll { $0.category == category }
        case .notificationDismissed(let interaction): dismissed(category: interaction.category.uppercased())
        case .settingsChanged(let settings): settingsChanged(settings)
        case .permissionChanged(let change): permissionChanged(change)
        case .userAction:
            state.lastActionAt = now
            state.lapse.noActionFired = false
        case .scoreViewed, .tick, .intent, .scoreComputed, .contactsSyncCompleted, .reminderUpserted, .reminderCancelled,
            .accessRequested, .securityNewSignin, .securitySuspiciousActivity, .delivery, .decision, .sender:
            break
        }
    }

    /// P-SEC-1: upstream items go out unchanged but for their record id; "Recently Added"
    /// feeds the "new contacts from sync" total (P-WB-1).
    private mutating func passThrough(_ item: SectionItem) {
        if item.section == "recently_added" {
            let count = (item.item["count"] ?? item.item["added"])?.intValue ?? 1
            state.sinceOpen.newContacts += Int(max(0, count))
        }
        emitSection(item.section, itemId: item.itemId, item: item.item, expiresAt: item.expiresAt)
    }

    /// P-EVT-1: value events get `user_was_active`, churn signals `user_age_days`.
    private mutating func passThrough(_ event: RetentionEvent) {
        var properties = event.properties
        switch event.event {
        case "retention.value_event_delivered":
            let active = state.lastOpenAt.map { now - $0 <= profile.activity.activeWindow } ?? false
            properties["user_was_active"] = .bool(active)
        case "retention.churn_signal_detected":
            if properties["user_age_days"] == nil, let age = userAgeDays { properties["user_age_days"] = .int(Int64(age)) }
        default:
            break
        }
        emitEvent(event.event, properties)
    }

    private mutating func signedUp(_ signup: UserSignedUp) {
        // A zone the user gave is kept as given, UTC included, so that explain can tell a user
        // who chose UTC from one who never said (both are on UTC, P-TIME-1).
        state.zone = signup.timeZone
        refreshLocalTime()
        if state.signedUpAt == nil { state.signedUpAt = now }
        // Sign-up counts as an open (§5) and starts the "no intentional action" clock.
        if state.lastOpenAt == nil { state.lastOpenAt = now }
        if state.lastActionAt == nil { state.lastActionAt = now }
    }

    private mutating func dismissed(category: String) {
        guard !profile.category(category).cooldownExempt else { return }
        state.dismissals.append(Dismissal(category: category, at: now))
        let since = now - profile.cooldown.within
        let count = state.dismissals.count { $0.category == category && $0.at > since }
        if count >= profile.cooldown.dismissals {
            state.cooldownUntil[category] = now + profile.cooldown.duration
            state.dismissals.removeAll { $0.category == category }
        }
    }

    private mutating func settingsChanged(_ settings: SettingsChanged) {
        if let zone = settings.timeZone {
            state.zone = zone
            refreshLocalTime()
        }
        if let q = settings.quietHours {
            let isDefault = q.start == profile.quietHours.start && q.end == profile.quietHours.end
            state.quietHours = isDefault ? nil : q
        }
        if let push = settings.pushEnabled { state.pushEnabled = push }
        if let email = settings.emailOptIn { state.emailOptIn = email }
        if let premium = settings.premium { state.premium = premium }
        if let disabled = settings.disabledCategories { state.disabledCategories = disabled.map { $0.uppercased() }.sorted() }
    }

    private mutating func permissionChanged(_ change: PermissionChanged) {
        let denied = change.status == .denied
        switch change.permission {
        case .notifications:
            if denied && !state.notificationsDenied { emitChurnSignal("notification_revoked") }
            state.notificationsDenied = denied
        case .contacts:
            if denied { emitChurnSignal("contacts_revoked") }
        }
    }
}
