/// The catalog entries (POLICY.md §1) the upstream workers raise intents for, with their
/// categories. The delivery engine renders the copy from its profile templates; upstream only
/// names the notification and fills `intent.data` (DESIGN.md's `intent.data` table).
public enum UpstreamNotification: String, CaseIterable, Sendable {
    case scoreUpdated = "score.updated"
    case scoreMilestone = "score.milestone"
    case dedupReady = "contacts.dedup_ready"
    case syncConflict = "contacts.sync_conflict"
    case enrichment = "contacts.enrichment"
    case birthday = "reminder.birthday"
    case followup = "reminder.followup"
    case accessRequest = "security.access_request"
    case newSignin = "security.new_signin"
    case suspiciousActivity = "security.suspicious_activity"

    /// The intent's `category`, as the catalog gives it.
    public var category: String {
        switch self {
        case .scoreUpdated, .scoreMilestone: "SCORE"
        case .dedupReady, .syncConflict, .enrichment: "CONTACTS"
        case .birthday, .followup: "REMINDER"
        case .accessRequest, .newSignin, .suspiciousActivity: "SECURITY"
        }
    }
}

/// Names of the §11 retention events upstream workers raise, and their property values.
enum RetentionEventName {
    static let valueEventDelivered = "retention.value_event_delivered"
    static let churnSignalDetected = "retention.churn_signal_detected"
}

/// `event_type` of `retention.value_event_delivered` (§10.2 value events).
enum ValueEventType: String {
    case scoreUpdated = "score_updated"
    case contactSyncCompleted = "contact_sync_completed"
    case dedupAutoMerged = "dedup_auto_merged"
}

/// `signal_type` of `retention.churn_signal_detected` (§9.1).
enum ChurnSignalType: String {
    case scoreDeclining = "score_declining"
    case dedupAccumulating = "dedup_accumulating"
}

/// Smart sections (P-SEC-1) the upstream workers fill.
enum Section {
    static let needsAttention = "needs_attention"
    static let scoreChanged = "score_changed"
    static let upcoming = "upcoming"
    static let recentlyAdded = "recently_added"
}
