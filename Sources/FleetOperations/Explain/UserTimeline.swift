public import FleetModel

/// Why a user got, or did not get, a notification: every step of the delivery worker that
/// touched the user, in log order, and per intent the chain of decisions it went through.
///
/// A value built from the log by `UserTimeline.init(log:window:profile:)`, rendered by
/// `TimelineRendering`; no I/O, so tests build it from records they made themselves.
public struct UserTimeline: Hashable, Sendable {
    public var userId: String
    /// The user's partition of the newest generation of the log and its partition count.
    public var partition: Int32
    public var partitionCount: Int
    public var window: TimeWindow
    /// The profile whose numbers (daily budget, default quiet hours) the state lines use.
    public var profileName: String
    /// Steps in the window, in log order.
    public var steps: [TimelineStep]
    /// Intents that arrived or were decided in the window, in order of arrival.
    public var chains: [IntentChain]
    /// Every generation of the delivery worker's log read (one unless the worker migrated), with
    /// the user's partition of each; `partition` is the newest's.
    public var generations: [UserLog.LogGeneration]
    /// What the sender did with the deliveries in `chains` (attempts, answers, receipts); nil
    /// when the sender's topics were not read (a timeline built from a log in memory).
    public var sends: SendTrail?

    public var isEmpty: Bool { steps.isEmpty }

    /// The ids of the deliveries the chains show, whose sends an explanation reads.
    public var deliveryIds: Set<String> { Set(chains.flatMap(\.links).compactMap(\.delivery?.id)) }
}

/// One fold step of the user's partition that concerned the user: one inbox record, with what
/// it produced for the user and how the user's state changed.
public struct TimelineStep: Hashable, Sendable {
    /// The step's log time (the history's `log_time`, else its outputs' or record's timestamp).
    public var at: Timestamp
    /// Where the step's record sits in the generation of the log it was folded in
    /// (`rin.delivery.inbox`, `rin.delivery.inbox.g2`, …); nil when it is no longer retained.
    public var inbox: SourceCoordinates?
    public var input: StepInput
    /// The user's outputs in the order the step produced them.
    public var outputs: [StepOutput]
    /// The state lines that changed (see `StateFacts`).
    public var stateChanges: [StateFactChange]
}

/// The record a step folded.
public enum StepInput: Hashable, Sendable {
    /// One of the user's own records. `origin` is where a fleet worker took it from (the
    /// upstream record's coordinates, or `rin.app.activity`'s for forwarded activity); nil when
    /// it was written straight into the inbox.
    case record(FleetRecord, origin: SourceCoordinates?)
    /// A tick: it only moved log time, so what happened were this user's timers firing.
    case tick(id: String)
    /// Another user's record moved log time past this user's timer, which fired.
    case otherUser(type: String)
    /// The inbox record is gone (retention) or unreadable; the text says which.
    case missing(String)

    /// Whether the step's effects on this user came from timers rather than from a record of theirs.
    public var firedTimers: Bool {
        if case .record = self { false } else { true }
    }
}

/// One record a step wrote for the user.
public struct StepOutput: Hashable, Sendable {
    /// The record's timestamp: the time its timer fired or its record was processed.
    public var at: Timestamp
    public var topic: String
    public var record: FleetRecord
}

/// One intent's path: where it came from, every decision on it (deferrals first, then the final
/// one), and the decisions on the notifications the engine made from it (a digest), which
/// carry a `kind` and no `intent_id`.
public struct IntentChain: Hashable, Sendable {
    public var intentId: String
    /// The intent as it arrived, if its inbox record is retained.
    public var intent: Intent?
    /// Where and when it arrived in the inbox.
    public var arrival: SourceCoordinates?
    public var arrivedAt: Timestamp?
    public var links: [ChainLink]

    /// The outcome of the final decision, nil while the intent is still pending (or its decision
    /// is outside what was read).
    public var finalOutcome: DecisionOutcome? {
        links.last { $0.decision.intentId != nil && $0.decision.outcome.isFinal }?.decision.outcome
    }
}

/// One decision on an intent (or on a notification the engine made from it), with the step that
/// made it, what was delivered, and the state lines the decision's rule depends on.
public struct ChainLink: Hashable, Sendable {
    public var at: Timestamp
    public var step: SourceCoordinates?
    public var input: StepInput
    public var decision: Decision
    /// The delivery the decision names (`notification_id`), for final decisions that have one
    /// (delivered, merged, digested); nil for deferrals, whose notification is still pending.
    public var delivery: Delivery?
    /// The state after the step, limited to what the rule reads (e.g. the budget for P-BUD-1).
    public var state: [StateFact]

    /// Whether a timer made this decision (a coalescing window closing, a deferral ending):
    /// the step's record was a tick, another user's record, or a record other than the intent.
    public var firedByTimer: Bool {
        guard case .record(let record, _) = input else { return true }
        if let intentId = decision.intentId { return record.id != intentId }
        // An engine-made notification is decided when its time comes, except when an open
        // makes it pointless (P-BUD-5, P-LAP-6): that decision is the open's own.
        if case .appOpened = record, decision.outcome == .skipped, decision.reason == "opened_since" { return false }
        return true
    }
}
