public import FleetModel

/// What the sync worker remembers about one user.
public struct SyncState: Codable, Hashable, Sendable {
    /// Recent `sync_id`s: a re-delivered sync result is ignored.
    public var recentSyncIds = RecentKeys()
    /// P-SYN-5: the accumulating-dedup reminder was sent and the count has not dropped below
    /// the threshold since.
    public var dedupReminderSent = false

    public init() {}
}

/// The sync worker's decisions (POLICY.md P-SYN-1…5, retention spec §3, §4.1, §9.1), folding
/// `rin.contacts.sync-results`.
///
/// Per sync result, in this order (which fixes the output ids):
/// 1. `contacts.dedup_ready` {count}: the accumulating-dedup reminder (P-SYN-5, count = the
///    unreviewed suggestions) when it is due, otherwise new suggestions (P-SYN-1, count = the new
///    ones). Never both for one sync: the unreviewed count already includes the new ones, and
///    the delivery engine adds dedup counts when it merges (P-COAL-1), which would double them.
/// 2. `contacts.enrichment` {names, contact_ids} with every matched name in order (P-SYN-2).
/// 3. `contacts.sync_conflict` {count, contact_ids}: distinct contacts in order (P-SYN-3).
/// 4. "Recently Added" item when `added > 0` (P-SYN-4).
/// 5. Value events `contact_sync_completed` (`updated > 0`) and `dedup_auto_merged`
///    (`auto_merged > 0`) (P-SYN-4, §10.2).
/// 6. Churn signal `dedup_accumulating` with the reminder (P-SYN-5).
///
/// The age of the oldest unreviewed suggestion is measured at the sync's `completed_at`, the
/// moment the counts describe.
public struct SyncProcessor: UserProcessor {
    public let settings: SyncSettings

    public init(settings: SyncSettings = .rin) { self.settings = settings }

    public func initialState(userId: String) -> SyncState { SyncState() }

    public func process(_ record: FleetRecord, state: inout SyncState, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .contactsSyncCompleted(let sync):
            try sync.validate()
            guard !state.recentSyncIds.contains(sync.syncId) else { return }
            state.recentSyncIds.remember(sync.syncId, capacity: settings.rememberedSyncIds)
            apply(sync, to: &state, context: &context)
        case .tick:
            return
        default:
            throw RecordError("sync-worker does not process records of type '\(record.type)'")
        }
    }

    public func fireTimers(state: inout SyncState, context: inout ProcessingContext) {}

    public func nextWakeUp(_ state: SyncState) -> Timestamp? { nil }
    public static let nextWakeUpDependsOnStateAlone = true

    private func apply(_ sync: ContactsSyncCompleted, to state: inout SyncState, context: inout ProcessingContext) {
        let accumulating = dedupAccumulationDue(sync, state: &state)

        if accumulating {  // P-SYN-5
            context.emitIntent(.dedupReady, data: ["count": .integer(sync.unreviewedDedupSuggestions)])
        } else if sync.newDedupSuggestions > 0 {  // P-SYN-1
            context.emitIntent(.dedupReady, data: ["count": .integer(sync.newDedupSuggestions)])
        }

        if !sync.enrichment.isEmpty {  // P-SYN-2
            context.emitIntent(.enrichment, data: [
                "names": .strings(sync.enrichment.map(\.name)),
                "contact_ids": .strings(sync.enrichment.map(\.contactId)),
            ])
        }

        if !sync.conflicts.isEmpty {  // P-SYN-3: "{n} contacts changed", so distinct contacts
            var contactIds: [String] = []
            for conflict in sync.conflicts where !contactIds.contains(conflict.contactId) {
                contactIds.append(conflict.contactId)
            }
            context.emitIntent(.syncConflict, data: ["count": .integer(contactIds.count), "contact_ids": .strings(contactIds)])
        }

        if sync.added > 0 {  // P-SYN-4
            context.emitSectionItem(
                section: Section.recentlyAdded, itemId: Section.recentlyAdded,
                item: [
                    "count": .integer(sync.added),
                    "sync_id": .string(sync.syncId),
                    "completed_at": .string(sync.completedAt.rfc3339),
                ])
        }
        if sync.updated > 0 { context.emitValueEvent(.contactSyncCompleted) }
        if sync.autoMerged > 0 { context.emitValueEvent(.dedupAutoMerged) }

        if accumulating { context.emitChurnSignal(.dedupAccumulating) }
    }

    /// P-SYN-5: at least `dedupAccumulationCount` unreviewed suggestions, the oldest at least
    /// `dedupAccumulationMinAgeDays` old, and no reminder since the count was last below the
    /// threshold. Updates the once-until-reset flag.
    private func dedupAccumulationDue(_ sync: ContactsSyncCompleted, state: inout SyncState) -> Bool {
        guard sync.unreviewedDedupSuggestions >= settings.dedupAccumulationCount else {
            state.dedupReminderSent = false
            return false
        }
        guard !state.dedupReminderSent, let oldest = sync.oldestUnreviewedDedupAt,
              sync.completedAt - oldest >= .days(Int64(settings.dedupAccumulationMinAgeDays))
        else { return false }
        state.dedupReminderSent = true
        return true
    }
}
