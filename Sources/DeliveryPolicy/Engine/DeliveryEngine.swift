public import FleetModel

/// The delivery worker's decisions (POLICY.md §0–§3, §5–§9) as a pure per-user processor.
///
/// Input: every `rin.delivery.inbox` record of one user (intents, section items and retention
/// events from upstream, forwarded `rin.app.activity` records, ticks). Output, through the
/// context: `delivery` records, one final `decision` per intent and per notification the
/// engine makes itself (plus non-final `deferred` ones), smart-section items and §11 retention
/// events. Time comes only from `context.now`
/// and ids only from `context.nextID()`, so the same log gives byte-identical output.
///
/// All numbers, the catalog and the copy come from the `PolicyProfile`.
public struct DeliveryEngine: UserProcessor {
    public typealias State = DeliveryState

    public let profile: PolicyProfile
    private let prepared: PreparedProfile

    public init(profile: PolicyProfile) {
        self.profile = profile
        self.prepared = PreparedProfile(profile)
    }

    public func initialState(userId: String) -> DeliveryState { DeliveryState() }

    /// Applies one inbox record. Throws, leaving `state` and `context` untouched, for an intent
    /// the catalog does not allow (P-CAT-1) or a record that does not belong in the inbox.
    public func process(_ record: FleetRecord, state: inout DeliveryState, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .tick:
            return  // timers were fired by the runtime before this record
        case .intent(let intent):
            let entry = try IntentValidation.validate(intent, profile: prepared)
            let idHash = IdempotencyMemory.hash(intent.id)  // once, for the check and the memory
            if state.memory.contains(hash: idHash) { return }  // P-IDEM-1
            if !entry.type.alwaysDeliver { try Capacity.check(state) }
            withStep(&state, &context) { $0.intentArrived(intent, entry: entry, idHash: idHash) }
        case .sectionItem, .retentionEvent, .userSignedUp, .appOpened, .notificationOpened, .notificationDismissed,
            .settingsChanged, .permissionChanged, .userAction, .scoreViewed:
            let idHash = IdempotencyMemory.hash(Self.activityRecordID(record))
            if state.memory.contains(hash: idHash) { return }  // P-IDEM-1: a re-sent copy changes nothing
            withStep(&state, &context) { $0.recordArrived(record, idHash: idHash) }
        case .scoreComputed, .contactsSyncCompleted, .reminderUpserted, .reminderCancelled, .accessRequested,
            .securityNewSignin, .securitySuspiciousActivity, .delivery, .decision, .sender:
            throw RecordError("type '\(record.type)' does not belong on topic '\(Topics.deliveryInbox)'")
        }
    }

    public func fireTimers(state: inout DeliveryState, context: inout ProcessingContext) {
        withStep(&state, &context) { $0.fireDueTimers() }
    }

    /// The due times of its pending candidates and its cached lapse trigger: state only (the
    /// profile shaped them when they were computed), so restores hold idle users undecoded.
    public static let nextWakeUpDependsOnStateAlone = true

    public func nextWakeUp(_ state: DeliveryState) -> Timestamp? {
        EngineStep.nextWakeUp(state, profile: profile)
    }

    /// How much one user's state may hold, so that no producer can grow it without bound
    /// (DESIGN.md principle 7, `RecordLimits`): a non-security intent that would go beyond is
    /// refused — dead-lettered with this error, and re-drivable once the user's backlog is
    /// decided — instead of making a state, history record or delivery too large to write.
    /// Security intents are never refused (P-BUD-1).
    public enum Capacity {
        /// Intents waiting in windows and deferrals, held back for the digest, or summarised by
        /// a pending digest.
        public static let maxUndecidedIntents = 500
        /// Ids remembered for P-IDEM-1 beyond which non-security intents are refused; the last
        /// quarter of the memory's capacity is kept for security intents and activity.
        public static let maxRememberedForIntents = IdempotencyMemory.capacity * 3 / 4

        static func check(_ state: DeliveryState) throws(RecordError) {
            var undecided = state.day?.heldBack.count ?? 0
            for candidate in state.pending { undecided += candidate.intents.count + candidate.summarised.count }
            if undecided >= maxUndecidedIntents {
                throw RecordError(
                    "user already holds \(undecided) undecided intents, the most one user may hold (\(maxUndecidedIntents)); this intent is refused so the user's state stays bounded")
            }
            if state.memory.count >= maxRememberedForIntents {
                throw RecordError(
                    "user had \(state.memory.count) inputs within the idempotency window, the most for non-security intents (\(maxRememberedForIntents)); this intent is refused so the user's state stays bounded")
            }
        }
    }

    /// `record.id` for the records `recordArrived` handles. `FleetRecord.id` reads it through
    /// the `any RecordPayload` existential, which copies the record into a heap box on every
    /// call; this switch reads the field directly.
    private static func activityRecordID(_ record: FleetRecord) -> String {
        switch record {
        case .sectionItem(let r): r.id
        case .retentionEvent(let r): r.id
        case .userSignedUp(let r): r.id
        case .appOpened(let r): r.id
        case .notificationOpened(let r), .notificationDismissed(let r): r.id
        case .settingsChanged(let r): r.id
        case .permissionChanged(let r): r.id
        case .userAction(let r): r.id
        case .scoreViewed(let r): r.id
        default: record.id
        }
    }

    /// Runs `body` on a step that owns `state` and `context` for its duration: they are swapped
    /// in and out, so no collection is copied and the state's buffers stay uniquely referenced
    /// for in-place mutation.
    private func withStep(_ state: inout DeliveryState, _ context: inout ProcessingContext, _ body: (inout EngineStep) -> Void) {
        var step = EngineStep(prepared: prepared, taking: &state, &context)
        body(&step)
        step.finish(into: &state, &context)
    }
}
