/// One folded partition's lifecycle on this member, as a value: every event returns the actions
/// the runtime must perform, so each transition — the awkward ones included (revoked or lost
/// while restoring, a restore result arriving after a rewind) — is decided here and tested
/// without a broker. `FoldCore` holds one per assigned partition and performs the actions.
///
///     assigned ─► restoring(attempt) ─ state ready ─► active(lane) ─ revoke ─► revoked (fold parked)
///                   ▲        │  ▲                         │
///                   │        └──┴── restore failed        │
///                   └──────────── rewind ◄────────────────┘        any ─ lose ─► lost
///
/// An attempt number tells a current restore from a stale one: each assignment and each rewind
/// starts a new attempt, and a result or a retry for any other attempt is dropped.
struct PartitionLifecycle: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        /// Assigned, fetching paused, waiting for its state under `attempt`.
        case restoring(attempt: Int)
        /// Folding on lane `lane`.
        case active(lane: Int)
        /// Handed back in an orderly way after its work was committed.
        case revoked
        /// Taken away; its uncommitted work is void.
        case lost
    }

    enum Action: Equatable, Sendable {
        /// Stop fetching the partition: its records would find no fold.
        case pause
        /// Get the partition's state under `attempt`: a parked fold still current, else the
        /// changelog.
        case restore(attempt: Int)
        /// Start lane `lane` with the state, seek to the committed offset, fetch again.
        case startLane(lane: Int)
        /// End lane `lane` now, with whatever it has not sealed.
        case discardLane(lane: Int)
        /// End lane `lane` after the committed unit and keep its fold, for an assignment that
        /// gives the partition straight back.
        case parkFold(lane: Int)
        /// A restore result or retry for an attempt that is over.
        case dropStale(attempt: Int)
    }

    private(set) var phase: Phase

    /// A newly assigned partition (fetching starts paused: `KafkaConsumer.subscribe(pausingOnAssignment:)`).
    static func assigned(attempt: Int) -> (lifecycle: PartitionLifecycle, actions: [Action]) {
        (PartitionLifecycle(phase: .restoring(attempt: attempt)), [.restore(attempt: attempt)])
    }

    var isActive: Bool {
        if case .active = phase { return true }
        return false
    }

    /// The lane folding the partition, while active.
    var lane: Int? {
        if case .active(let lane) = phase { return lane }
        return nil
    }

    /// Revoked or lost: no event brings it back (a new assignment starts a new lifecycle).
    var hasLeft: Bool { phase == .revoked || phase == .lost }

    /// Whether a restore result or retry for `attempt` is still wanted.
    func awaits(attempt: Int) -> Bool {
        phase == .restoring(attempt: attempt)
    }

    /// The state for `attempt` is ready (restored, or a parked fold still current): it folds on
    /// lane `lane` from now on. A result for another attempt is dropped.
    mutating func stateReady(attempt: Int, lane: Int) -> [Action] {
        guard awaits(attempt: attempt) else { return [.dropStale(attempt: attempt)] }
        phase = .active(lane: lane)
        return [.startLane(lane: lane)]
    }

    /// The restore for `attempt` failed: asked again if it is still wanted.
    mutating func restoreFailed(attempt: Int) -> [Action] {
        guard awaits(attempt: attempt) else { return [.dropStale(attempt: attempt)] }
        return [.restore(attempt: attempt)]
    }

    /// A unit failed or a hand-over went wrong: the partition goes back to its committed state
    /// under a new attempt, whatever it was doing.
    mutating func rewind(attempt: Int) -> [Action] {
        switch phase {
        case .active(let lane):
            phase = .restoring(attempt: attempt)
            return [.discardLane(lane: lane), .pause, .restore(attempt: attempt)]
        case .restoring:
            phase = .restoring(attempt: attempt)
            return [.pause, .restore(attempt: attempt)]
        case .revoked, .lost:
            return []
        }
    }

    /// Handed back in an orderly way; the caller committed the open unit first, so an active
    /// fold is current and is parked. A partition still restoring has nothing to keep (its
    /// restore result, when it comes, is stale).
    mutating func revoke() -> [Action] {
        guard !hasLeft else { return [] }
        defer { phase = .revoked }
        if case .active(let lane) = phase { return [.parkFold(lane: lane)] }
        return []
    }

    /// Taken away without a commit (a lost assignment): the lane and its work go.
    mutating func lose() -> [Action] {
        guard !hasLeft else { return [] }
        defer { phase = .lost }
        if case .active(let lane) = phase { return [.discardLane(lane: lane)] }
        return []
    }
}
