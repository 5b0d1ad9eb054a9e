import HeapModule

/// The deterministic fold of one partition's log (DESIGN.md principle 3 and "Time"): the
/// per-user states, a min-heap of their wake-up times and the partition's log time.
///
/// The Kafka runtime and `fleetctl simulate` both drive a processor through this one type, so a
/// simulation and a production partition that see the same log agree byte for byte, ids
/// included. Every rule below exists to make each output a pure function of the log prefix:
///
/// - **Log time never goes backwards.** It is the largest timestamp seen so far; a record
///   stamped earlier (producer clocks, a `CreateTime` topic) is processed at the current log
///   time. A re-run reads the same timestamps in the same order, so it sees the same `now`.
/// - **Timers fire before any later record, in time order.** A record at `t` first fires every
///   timer due at or before `t`, each with `now` = its due time (never earlier than the log
///   time), then the record is processed; afterwards any timer the record made due at or before
///   `t` fires too. So a state never holds an overdue timer after a step, and when a timer fires
///   does not depend on when the next record happens to arrive.
/// - **Ties between users break by user id**, never by dictionary order, which differs from
///   process to process (Swift seeds its hashing per process).
/// - **Output ids come from log coordinates.** All ids of one step are
///   `topic:partition:offset:index` of the record that caused the step, the index running on
///   across the fired users in firing order and then into the record's own outputs.
/// - **A rejected record changes nothing.** When the processor throws, the user's state and the
///   record's outputs are discarded and the step reports the error for the dead-letter topic;
///   the partition goes on with the next record (principle 7).
///
/// Cost: a timer is one heap pop plus one push, O(log n) in the number of scheduled users; a
/// record is one dictionary lookup plus whatever the processor does. Re-scheduling a user
/// leaves its old heap entry behind (lazy invalidation); the heap is rebuilt once stale entries
/// outnumber the live ones, which keeps it within a constant factor of the user count.
public struct PartitionFold<P: UserProcessor>: Sendable {
    public let processor: P

    /// Every user's state. The runtime writes changed ones to `<worker>.state`.
    public private(set) var states: [String: P.State]

    /// The largest record timestamp (or advanced-to time) folded so far; `nil` before the first.
    public private(set) var logTime: Timestamp?

    /// The wake-up time each scheduled user is known to have: a heap entry is live only when it
    /// matches this map (lazy invalidation).
    private var scheduled: [String: Timestamp] = [:]
    private var heap: Heap<WakeUp> = Heap()

    /// A fresh partition.
    public init(processor: P) {
        self.processor = processor
        self.states = [:]
        self.logTime = nil
    }

    /// A partition restored from its changelog (principle 5): the states as of some input offset
    /// and the log time at that offset. The timer heap is rebuilt from each state's
    /// `nextWakeUp`; because the heap orders by (time, user id), the order the states are given
    /// in cannot change which timer fires first.
    public init(processor: P, restoring states: [String: P.State], logTime: Timestamp?) {
        self.processor = processor
        self.states = states
        self.logTime = logTime
        var entries: [WakeUp] = []
        entries.reserveCapacity(states.count)
        for (user, state) in states {
            if let due = processor.nextWakeUp(state) {
                scheduled[user] = due
                entries.append(WakeUp(due: due, user: user))
            }
        }
        heap = Heap(entries)
    }

    /// The earliest time a timer of this partition is due, if any.
    ///
    /// After every step it is later than `logTime`, unless a processor broke its contract by
    /// reporting, right after firing, a wake-up not after the time it fired at (see `advance`).
    public var nextWakeUp: Timestamp? { heap.min?.due }

    /// Folds one record read at `coordinates` with broker timestamp `timestamp`.
    ///
    /// Fires every timer due at or before the record's time, processes the record for its user
    /// (a `tick` has no user: it only moves time forward), then fires any timer the record made
    /// due. `firstIndex` is the index of the first id handed out from `coordinates`: 0 in the
    /// runtime; the simulator passes on the `nextIndex` of an `advance` it made at the same
    /// coordinates, so the ids stay unique.
    public mutating func apply(
        _ record: FleetRecord, timestamp: Timestamp, coordinates: SourceCoordinates, firstIndex: Int = 0
    ) -> FoldStep<P.State> {
        let now = max(timestamp, logTime ?? timestamp)
        var step = FoldStep<P.State>(ids: OutputIDs(origin: coordinates, startingAt: firstIndex))
        fireTimers(dueBy: now, into: &step)
        logTime = now
        if case .tick = record { return step }

        let user = record.userId
        guard !user.isEmpty else {
            step.deadLetter = RecordError("record of type '\(record.type)' has no user_id")
            return step
        }
        let before = states[user]
        let start = before ?? processor.initialState(userId: user)
        var state = start
        var context = ProcessingContext(now: now, userId: user, ids: step.ids)
        do {
            try processor.process(record, state: &state, context: &context)
        } catch {
            // `state` and `context` are local copies: dropping them is what leaves the
            // partition untouched. The ids the failed attempt took are not reused either way
            // (`step.ids` was not advanced), so a re-run allots the same ids.
            step.deadLetter = error
            return step
        }
        step.ids = context.ids
        step.outputs.append(contentsOf: context.outputs)
        store(state, for: user, start: start, before: before, into: &step)
        reschedule(user, processor.nextWakeUp(state), fired: false)
        fireTimers(dueBy: now, into: &step)
        return step
    }

    /// Fires every timer due at or before `time` and moves the log time to `time` (if later):
    /// what a `tick` record does, without a record. The simulator uses it to let time pass
    /// between input lines; `origin` names the log position the ids derive from (the next
    /// offset of the folded log), `firstIndex` the first index to use there.
    public mutating func advance(to time: Timestamp, origin: SourceCoordinates, firstIndex: Int = 0) -> FoldStep<P.State> {
        let now = max(time, logTime ?? time)
        var step = FoldStep<P.State>(ids: OutputIDs(origin: origin, startingAt: firstIndex))
        fireTimers(dueBy: now, into: &step)
        logTime = now
        return step
    }

    // MARK: - Timers

    /// Pops due wake-ups in (time, user) order and fires each user's timers.
    ///
    /// A processor must report, after firing, a next wake-up later than the time it fired at. If
    /// one does not, firing it again at once could spin forever, so such a user is put back only
    /// after this pass: it fires again on the next step, and the partition keeps going.
    private mutating func fireTimers(dueBy limit: Timestamp, into step: inout FoldStep<P.State>) {
        var overdue: [WakeUp] = []
        while let top = heap.min, top.due <= limit {
            heap.removeMin()
            guard scheduled[top.user] == top.due else { continue }  // stale entry
            let now = max(top.due, logTime ?? top.due)
            logTime = now
            let before = states[top.user]
            let start = before ?? processor.initialState(userId: top.user)
            var state = start
            var context = ProcessingContext(now: now, userId: top.user, ids: step.ids)
            processor.fireTimers(state: &state, context: &context)
            step.ids = context.ids
            step.outputs.append(contentsOf: context.outputs)
            store(state, for: top.user, start: start, before: before, into: &step)
            let next = processor.nextWakeUp(state)
            if let next, next <= now {
                scheduled[top.user] = next
                overdue.append(WakeUp(due: next, user: top.user))
            } else {
                reschedule(top.user, next, fired: true)
            }
        }
        for entry in overdue { heap.insert(entry) }
        compactHeapIfMostlyStale()
    }

    /// Records `user`'s new wake-up. `fired` says the user's heap entry was just popped, so a
    /// new entry is needed even when the time is unchanged.
    private mutating func reschedule(_ user: String, _ due: Timestamp?, fired: Bool) {
        guard let due else {
            scheduled[user] = nil
            return
        }
        if !fired, scheduled[user] == due { return }
        scheduled[user] = due
        heap.insert(WakeUp(due: due, user: user))
    }

    private mutating func compactHeapIfMostlyStale() {
        guard heap.count > 2 * scheduled.count + 64 else { return }
        heap = Heap(scheduled.map { WakeUp(due: $0.value, user: $0.key) })
    }

    // MARK: - State changes

    /// Keeps `state` if it differs from `start` (the stored state, or the initial one of a user
    /// never stored): unchanged users cost no changelog record, and users a record did not
    /// change are not kept in memory.
    private mutating func store(
        _ state: P.State, for user: String, start: P.State, before: P.State?, into step: inout FoldStep<P.State>
    ) {
        if state == start { return }
        states[user] = state
        step.recordChange(of: user, before: before, after: state)
    }
}

/// One entry of the timer heap, ordered by due time, then user id, so equal times fire in an
/// order that is the same in every process.
private struct WakeUp: Comparable, Sendable {
    var due: Timestamp
    var user: String

    static func < (lhs: WakeUp, rhs: WakeUp) -> Bool {
        lhs.due != rhs.due ? lhs.due < rhs.due : lhs.user < rhs.user
    }
}

/// What one fold step produced: the outputs in order, the users whose state changed, and the
/// error of a rejected record.
public struct FoldStep<State: Codable & Hashable & Sendable>: Sendable {
    /// Every output, in the order produced: fired timers in (time, user) order, then the record's.
    public var outputs: [OutputRecord] = []
    /// One entry per user whose state changed in this step, in the order of their first change;
    /// `before` is the state at the start of the step (`nil` for a user never stored), `after`
    /// at its end. The runtime writes `after` to `<worker>.state` and both to `<worker>.history`.
    public private(set) var changes: [StateChange<State>] = []
    /// Set when the processor rejected the record: it goes to `<topic>.dlq`, nothing else
    /// about it happened.
    public var deadLetter: RecordError?
    /// The ids handed out so far; `ids.nextIndex` is where a later step at the same coordinates
    /// must start to keep ids unique.
    public internal(set) var ids: OutputIDs

    /// Positions in `changes` by user, built only once a step changes many users (a tick after
    /// a quiet night fires every user's 09:00 digest), so the common one-user step allocates no
    /// index.
    private var changeIndex: [String: Int] = [:]

    init(ids: OutputIDs) { self.ids = ids }

    /// The index the next id from these coordinates would take.
    public var nextIndex: Int { ids.nextIndex }

    mutating func recordChange(of user: String, before: State?, after: State) {
        if let position = position(of: user) {
            changes[position].after = after
            return
        }
        changes.append(StateChange(userId: user, before: before, after: after))
        if !changeIndex.isEmpty { changeIndex[user] = changes.count - 1 }
    }

    private mutating func position(of user: String) -> Int? {
        if !changeIndex.isEmpty { return changeIndex[user] }
        if changes.count < 16 { return changes.firstIndex { $0.userId == user } }
        for (position, change) in changes.enumerated() { changeIndex[change.userId] = position }
        return changeIndex[user]
    }
}

/// A user's state before and after one fold step.
public struct StateChange<State: Codable & Hashable & Sendable>: Hashable, Sendable {
    public var userId: String
    public var before: State?
    public var after: State

    public init(userId: String, before: State?, after: State) {
        self.userId = userId; self.before = before; self.after = after
    }
}
