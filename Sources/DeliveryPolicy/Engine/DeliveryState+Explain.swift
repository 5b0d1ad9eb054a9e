public import FleetModel

/// What operator tools (`fleetctl explain`) may read of a user's delivery state: the settings,
/// the day's budget ledger, quiet mode, cool-downs and the pending notifications (the user's
/// timers), in plain types.
///
/// Why a view and not public fields: the state's layout and compact changelog encoding are the
/// engine's to change for speed; tools decode the history's before/after images with
/// `DeliveryState(serialized:)` and read them only through this copy, which stays stable.
public struct DeliveryStateView: Hashable, Sendable {
    /// The current local day's counts (P-BUD-1, P-BUD-5).
    public struct Ledger: Hashable, Sendable {
        /// The user's local date the counts belong to.
        public var date: CivilDate
        /// Non-security deliveries that day (the daily budget's use).
        public var delivered: Int
        /// Non-security intents that arrived that day (the digest threshold's count).
        public var candidates: Int
        /// Deliveries per notification type that day.
        public var deliveredByType: [String: Int]
    }

    /// A notification the engine will decide at `dueAt`: one of the user's timers.
    public struct Pending: Hashable, Sendable {
        /// `intents`, `digest`, `lapsed_summary`, `top_pending`, `value_reminder`, `dormant_email`.
        public var kind: String
        /// `collecting` (coalescing window, P-COAL-1), `deferred` (P-DND-1), `scheduled`.
        public var phase: String
        public var category: String
        /// The id the delivery will carry, if it is delivered.
        public var notificationId: String
        public var dueAt: Timestamp
        /// End of the current deferral, as announced in the `deferred` decisions.
        public var until: Timestamp?
        /// The intents waiting in it, in arrival order.
        public var intentIds: [String]
    }

    public var timeZone: Zone?
    /// The user's own quiet hours; nil means the profile's default (P-DND-1).
    public var quietHours: QuietHours?
    public var pushEnabled: Bool
    public var notificationsDenied: Bool
    public var emailOptIn: Bool
    public var premium: Bool
    public var disabledCategories: [String]
    public var lastOpenAt: Timestamp?
    public var lastActionAt: Timestamp?
    public var ledger: Ledger?
    public var pending: [Pending]
    /// Since when the user is in quiet mode (P-LAP-3), if they are.
    public var quietModeSince: Timestamp?
    /// Cool-downs in force per category (P-COOL-1).
    public var cooldownUntil: [String: Timestamp]
}

extension DeliveryState {
    /// The operator's view of this state (see `DeliveryStateView`).
    public var view: DeliveryStateView {
        DeliveryStateView(
            timeZone: zone, quietHours: quietHours, pushEnabled: pushEnabled, notificationsDenied: notificationsDenied,
            emailOptIn: emailOptIn, premium: premium, disabledCategories: disabledCategories,
            lastOpenAt: lastOpenAt, lastActionAt: lastActionAt,
            ledger: day.map { ledger in
                DeliveryStateView.Ledger(
                    date: CivilDate(daysSinceEpoch: ledger.day), delivered: ledger.delivered,
                    candidates: ledger.candidates, deliveredByType: ledger.byType)
            },
            pending: pending.map { candidate in
                DeliveryStateView.Pending(
                    kind: candidate.kind.viewName, phase: candidate.phase.viewName, category: candidate.category,
                    notificationId: candidate.notificationId, dueAt: candidate.dueAt, until: candidate.until,
                    intentIds: candidate.intents.map(\.id))
            },
            quietModeSince: lapse.hasFired(.quietMode) ? lapse.quietSince : nil,
            cooldownUntil: cooldownUntil)
    }
}

extension Candidate.Kind {
    fileprivate var viewName: String {
        switch self {
        case .intents: "intents"
        case .digest: "digest"
        case .lapsedSummary: "lapsed_summary"
        case .topPending: "top_pending"
        case .valueReminder: "value_reminder"
        case .dormantEmail: "dormant_email"
        }
    }
}

extension Candidate.Phase {
    fileprivate var viewName: String {
        switch self {
        case .collecting: "collecting"
        case .deferred: "deferred"
        case .scheduled: "scheduled"
        }
    }
}
