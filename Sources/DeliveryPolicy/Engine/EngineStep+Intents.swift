import FleetModel

extension EngineStep {
    /// A validated, never-seen intent arrives; `idHash` is `IdempotencyMemory.hash(intent.id)`.
    mutating func intentArrived(_ intent: Intent, entry: CatalogEntry, idHash: UInt64) {
        prune()
        state.memory.remember(hash: idHash, at: now)  // P-IDEM-1: also blocks copies while it is pending
        let pending = PendingIntent(id: intent.id, type: entry.type.name, data: intent.data, expiresAt: intent.expiresAt, arrivedAt: now)
        countSinceOpen(pending, entry)  // P-WB-2: every intent, delivered or not

        if entry.type.alwaysDeliver {
            deliverImmediately(pending, entry)
            return
        }
        updateLedger { $0.candidates += 1 }  // P-BUD-5 threshold

        let window = profile.coalescing.window
        if entry.category.coalesce && window.milliseconds > 0 {
            // P-COAL-1: held from the first arrival of the category, not sliding.
            if let i = collectingWindow(of: entry.type.category) {
                state.pending[i].intents.append(pending)
            } else {
                var candidate = Candidate(
                    kind: .intents, phase: .collecting, category: entry.type.category, notificationId: context.nextID(),
                    firstArrival: now, dueAt: now + window)
                // Room for a burst: windows collect a few intents, and growing from one
                // reallocated at every doubling.
                candidate.intents.reserveCapacity(4)
                candidate.intents.append(pending)
                state.pending.append(candidate)
            }
        } else {
            var candidate = Candidate(
                kind: .intents, phase: .collecting, category: entry.type.category, notificationId: context.nextID(),
                firstArrival: now, dueAt: now)
            candidate.intents = [pending]
            release([candidate])
        }
    }

    /// The pending window still collecting intents of `category`. By index: the predicate of
    /// `firstIndex(where:)` received a copy of every candidate it looked at.
    private func collectingWindow(of category: String) -> Int? {
        for i in state.pending.indices
        where state.pending[i].kind == .intents && state.pending[i].phase == .collecting && state.pending[i].category == category {
            return i
        }
        return nil
    }

    /// SECURITY (P-BUD-1): delivered at once, held back by nothing but P-IDEM-1; in-app when
    /// push is impossible (P-PREF-1).
    private mutating func deliverImmediately(_ intent: PendingIntent, _ entry: CatalogEntry) {
        guard let rendered = Renderer.render(entry, [intent]) else { return }
        let notificationId = context.nextID()
        if pushBlocked {
            emitSectionItems(for: [intent], reason: "permission_denied", rendered: rendered)
            emitDecision(intent.id, .delivered, reason: "in_app_permission_denied", rule: "P-PREF-1", notificationId: notificationId)
        } else {
            emitDelivery(rendered, notificationId: notificationId, category: entry.type.category, channel: .push, merged: [intent.id])
            emitDecision(intent.id, .delivered, reason: "security", rule: "P-BUD-1", notificationId: notificationId)
        }
    }

    /// P-WB-2 totals and the last known score.
    private mutating func countSinceOpen(_ intent: PendingIntent, _ entry: CatalogEntry) {
        guard let line = entry.type.sinceOpen else { return }
        let data = intent.data
        switch line {
        case .score:
            guard let new = (data["new"] ?? data["score"])?.intValue.map(Int.init) else { return }
            if state.sinceOpen.scoreNew == nil {
                state.sinceOpen.scoreOld = data["old"]?.intValue.map(Int.init) ?? state.lastScore
            }
            state.sinceOpen.scoreNew = new
            state.lastScore = new
        case .dedup: state.sinceOpen.dedup += amount(of: data, entry)
        case .access: state.sinceOpen.access += amount(of: data, entry)
        case .enrichment: state.sinceOpen.enrichment += amount(of: data, entry)
        case .birthdays:
            let day = today
            state.sinceOpen.birthdayDays.removeAll { $0 < day - 6 }  // only "this week" is ever read
            state.sinceOpen.birthdayDays += Array(repeating: day, count: amount(of: data, entry))
        case .reminders: state.sinceOpen.reminders += amount(of: data, entry)
        case .newContacts: state.sinceOpen.newContacts += amount(of: data, entry)
        }
    }

    private func amount(of data: JSONObject, _ entry: CatalogEntry) -> Int {
        switch entry.type.merge {
        case .sumCount: Int(data["count"]?.intValue ?? 0)
        case .names: data["names"]?.arrayValue?.count ?? 0
        default: 1
        }
    }

    /// P-SEC-2 / P-BUD-4: one section item per type among `intents`, with the merged copy.
    ///
    /// `rendered`, when given, is the copy the caller already rendered for all the intents of
    /// its type among `intents`, in order (a window that lost on budget or duplicate content):
    /// that group's item reuses it instead of rendering the same copy a second time.
    mutating func emitSectionItems(for intents: [PendingIntent], reason: String, rendered known: RenderedNotification? = nil) {
        guard !intents.isEmpty else { return }
        let first = intents[0].type
        // A batch nearly always holds one type: then it is its own group, with no list of
        // groups (an allocation and a copy of the batch per call). By index, like the loops of
        // `decideIntents`: `allSatisfy` copied every intent.
        if intents.indices.allSatisfy({ intents[$0].type == first }) {
            emitSectionItem(name: first, group: intents, reason: reason, rendered: known)
            return
        }
        // Groups by type in order of first appearance. A batch holds a few types, so a linear
        // scan beats hashing into a dictionary.
        var groups: [(name: String, intents: [PendingIntent])] = []
        for intent in intents {
            if let i = groups.firstIndex(where: { $0.name == intent.type }) {
                groups[i].intents.append(intent)
            } else {
                groups.append((intent.type, [intent]))
            }
        }
        for (name, group) in groups { emitSectionItem(name: name, group: group, reason: reason, rendered: known) }
    }

    /// The section item of `group`, the intents of type `name` in a batch (`emitSectionItems`).
    private mutating func emitSectionItem(name: String, group: [PendingIntent], reason: String, rendered known: RenderedNotification?) {
        guard let entry = prepared.catalog[name], let section = entry.type.section,
              let rendered = known?.type == name ? known : Renderer.render(entry, group)
        else { return }
        var itemId = name
        if let key = entry.type.sectionKey, let value = group[0].data[key].flatMap(Self.scalarText) { itemId += ":" + value }
        let item = Self.renderedItem.make(
            .string(name), .string(rendered.title), .string(rendered.body), .string(rendered.deepLink),
            .array(group.map { .string($0.id) }), .string(reason))
        var expiresAt = profile.sections.value(forKey: section)?.expiresAfter.map { now + $0 }
        if let intentExpiry = Self.earliestExpiry(of: group) { expiresAt = min(expiresAt ?? intentExpiry, intentExpiry) }
        emitSection(section, itemId: itemId, item: item, expiresAt: expiresAt)
    }

    /// The section item of intents that were not pushed (`emitSectionItems`).
    private static let renderedItem = JSONObjectTemplate(keys: ["notification", "title", "body", "deep_link", "intent_ids", "reason"])

    /// The earliest `expiresAt` among `intents` (a loop: `compactMap(...).min()` built an array).
    static func earliestExpiry(of intents: [PendingIntent]) -> Timestamp? {
        var earliest: Timestamp?
        for i in intents.indices {  // by index: `for intent in intents` copied each intent
            if let at = intents[i].expiresAt, earliest.map({ at < $0 }) ?? true { earliest = at }
        }
        return earliest
    }

    static func scalarText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): s
        case .int(let i): String(i)
        default: nil
        }
    }
}
