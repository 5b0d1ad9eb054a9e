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
/// - **Only stored users have timers.** A user whose state still equals `initialState` is not
///   stored (it costs no memory and no changelog record), so a processor's initial state must
///   have no wake-up; otherwise a restored partition would not know the timer.
/// - **A rejected record changes nothing.** When the processor throws, the user's state and the
///   record's outputs are discarded and the step reports the error for the dead-letter topic;
///   the partition goes on with the next record (principle 7).
///
/// - **A held image decodes on first touch.** A partition restored lazily holds most users as
///   their changelog images (`HeldStateImage`) with the wake-ups recorded beside them; the first
///   record or timer of such a user decodes its image, after which the user is like any other.
///   Decoding is a pure function of the bytes, so a lazily restored partition folds exactly as
///   an eagerly restored one. An image that does not decode (damaged bytes; restore decodes an
///   image of a newer format at once instead of holding it) stops only its user, never the
///   partition: a record for the user is
///   rejected with the decode error (dead-lettered, re-drivable once a build reads the image),
///   a timer of the user is dropped and reported in `FoldStep.undecodable`, and the image stays
///   held, unchanged, as the changelog still has it.
///
/// Cost: a timer is one heap pop plus one push, O(log n) in the number of scheduled users (see
/// `TimerSchedule`); a record is a state lookup plus whatever the processor does. The fold's
/// code is `@inlinable` so that each worker's build specializes it for its processor: an
/// unspecialized generic fold spent a sixth of its time instantiating generic metadata.
public struct PartitionFold<P: UserProcessor>: Sendable {
    public let processor: P

    @usableFromInline var storedStates: [String: P.State]
    @usableFromInline var storedLogTime: Timestamp?
    @usableFromInline var timers: TimerSchedule
    /// Restored users not decoded yet; empty unless restored lazily.
    @usableFromInline var heldImages: [String: HeldStateImage]
    @usableFromInline let decodeImage: StateImageDecoder<P.State>?

    /// What each step keeps of the users it changed: their states before and after the step
    /// (`.states`, the default), or only who they were (`.users`). Set it before folding.
    public var recording: ChangeRecording = .states

    /// Every decoded user's state (all users, unless restored lazily: see `held`). The runtime
    /// writes changed ones to `<worker>.state`.
    @inlinable public var states: [String: P.State] { storedStates }

    /// Calls `body` with `user`'s decoded state where it lies in the table, or returns nil when
    /// the user has none. Why: through `states` (or its getter by index) the state was copied
    /// to be read, a retain and a release of each collection it holds; the runtime reads every
    /// changed user's state once per commit unit to write its image. `mutating` only for the
    /// exclusive access that lets the state be lent in place; nothing is changed.
    @inlinable
    public mutating func withState<R, E: Error>(of user: String, _ body: (borrowing P.State) throws(E) -> R) throws(E) -> R? {
        guard let index = storedStates.index(forKey: user) else { return nil }
        return try Self.lend(&storedStates.values[index], to: body)
    }

    @inlinable
    static func lend<R, E: Error>(_ state: inout P.State, to body: (borrowing P.State) throws(E) -> R) throws(E) -> R {
        try body(state)
    }

    /// Restored users still held as images, not decoded because nothing touched them yet.
    @inlinable public var held: [String: HeldStateImage] { heldImages }

    /// Users with a state, decoded or held.
    @inlinable public var userCount: Int { storedStates.count + heldImages.count }

    /// The largest record timestamp (or advanced-to time) folded so far; `nil` before the first.
    @inlinable public var logTime: Timestamp? { storedLogTime }

    /// A fresh partition.
    @inlinable
    public init(processor: P) {
        self.processor = processor
        self.storedStates = [:]
        self.storedLogTime = nil
        self.timers = TimerSchedule()
        self.heldImages = [:]
        self.decodeImage = nil
    }

    /// A partition restored from its changelog (principle 5): the states as of some input offset
    /// and the log time at that offset. The timers are rebuilt from each state's `nextWakeUp`;
    /// they fire in (time, user id) order whatever order the states come in.
    @inlinable
    public init(processor: P, restoring states: [String: P.State], logTime: Timestamp?) {
        self.init(processor: processor, states: states, held: [:], decode: nil, logTime: logTime)
    }

    /// A partition restored lazily: `states` decoded (images without a recorded wake-up), `held`
    /// still as images, decoded by `decode` when a record or timer first touches their user.
    /// Held users' timers come from their recorded wake-ups, which must be what `nextWakeUp`
    /// says of the decoded state (it depends on the state alone).
    @inlinable
    public init(
        processor: P, restoring states: [String: P.State], holding held: [String: HeldStateImage],
        decode: @escaping StateImageDecoder<P.State>, logTime: Timestamp?
    ) {
        self.init(processor: processor, states: states, held: held, decode: decode, logTime: logTime)
    }

    /// The restoring initializers' one body: a decoder exactly when there may be held images.
    @inlinable
    init(
        processor: P, states: [String: P.State], held: [String: HeldStateImage], decode: StateImageDecoder<P.State>?,
        logTime: Timestamp?
    ) {
        self.processor = processor
        self.storedStates = states
        self.storedLogTime = logTime
        self.heldImages = held
        self.decodeImage = decode
        var wakeUps: [String: Timestamp] = [:]
        wakeUps.reserveCapacity(states.count + held.count)
        for (user, state) in states {
            if let due = processor.nextWakeUp(state) { wakeUps[user] = due }
        }
        for (user, image) in held {
            if let due = image.wakeUp { wakeUps[user] = due }
        }
        self.timers = TimerSchedule(wakeUps)
    }

    /// The earliest time a timer of this partition is due, if any.
    ///
    /// After every step it is later than `logTime`, unless a processor broke its contract by
    /// reporting, right after firing, a wake-up not after the time it fired at (such a user
    /// fires again on the next step, once).
    @inlinable public var nextWakeUp: Timestamp? { timers.next }

    /// Folds one record read at `coordinates` with broker timestamp `timestamp`.
    ///
    /// Fires every timer due at or before the record's time, processes the record for its user
    /// (a `tick` has no user: it only moves time forward), then fires any timer the record made
    /// due. `firstIndex` is the index of the first id handed out from `coordinates`: 0 in the
    /// runtime; the simulator passes on the `nextIndex` of an `advance` it made at the same
    /// coordinates, so the ids stay unique.
    ///
    /// `coordinates` are the record's identity for ids: where it was read, or for a record a
    /// fleet worker forwarded or produced into this log, where it came from, with
    /// `originIndex` its position among the producing step's outputs (see `OutputIDs`).
    @inlinable
    public mutating func apply(
        _ record: FleetRecord, timestamp: Timestamp, coordinates: SourceCoordinates, originIndex: Int? = nil,
        firstIndex: Int = 0
    ) -> FoldStep<P.State> {
        var step = FoldStep<P.State>(ids: OutputIDs(origin: coordinates, originIndex: originIndex, startingAt: firstIndex))
        fold(record, timestamp: timestamp, into: &step)
        timers.endOfStep()
        // One return, of a value nothing else holds: with the early returns (and a `defer`)
        // in this function, each of them copied the step out and destroyed the local.
        return step
    }

    /// `apply`'s work, writing into `step`.
    @inlinable
    mutating func fold(_ record: FleetRecord, timestamp: Timestamp, into step: inout FoldStep<P.State>) {
        let now = max(timestamp, storedLogTime ?? timestamp)
        fireTimers(dueBy: now, into: &step)
        storedLogTime = now
        if case .tick = record { return }

        let user = record.userId
        guard !user.isEmpty else {
            step.deadLetter = RecordError("record of type '\(record.type)' has no user_id")
            return
        }
        let stored: [String: P.State].Index?
        do {
            stored = try storedIndex(of: user)
        } catch {
            step.deadLetter = RecordError(
                "the state of user \(RecordError.quote(user)) restored from the changelog does not decode, so its records cannot be processed: \(error)")
            return
        }
        var state = state(at: stored, of: user)
        var context = ProcessingContext(now: now, userId: user, ids: step.ids)
        do {
            try processor.process(record, state: &state, context: &context)
        } catch {
            // `state` and `context` are local copies: dropping them is what leaves the
            // partition untouched. `step.ids` was not advanced, so the ids the failed attempt
            // took are handed out again, as they would be in a re-run.
            step.deadLetter = error
            return
        }
        step.ids = context.ids
        let firstOwn = step.outputs.count
        step.take(context.takeOutputs())
        step.recordOutputs = firstOwn..<step.outputs.count
        step.recordUser = user
        let wakeUp = processor.nextWakeUp(state)
        if keep(consume state, for: user, at: stored, into: &step) {
            timers.update(user, to: wakeUp)
        }
        fireTimers(dueBy: now, into: &step)
    }

    /// Fires every timer due at or before `time` and moves the log time to `time` (if later):
    /// what a `tick` record does, without a record. The simulator uses it to let time pass
    /// between input lines; `origin` names the log position the ids derive from (the next
    /// offset of the folded log), `firstIndex` the first index to use there.
    @inlinable
    public mutating func advance(
        to time: Timestamp, origin: SourceCoordinates, originIndex: Int? = nil, firstIndex: Int = 0
    ) -> FoldStep<P.State> {
        let now = max(time, storedLogTime ?? time)
        var step = FoldStep<P.State>(ids: OutputIDs(origin: origin, originIndex: originIndex, startingAt: firstIndex))
        fireTimers(dueBy: now, into: &step)
        storedLogTime = now
        timers.endOfStep()
        return step
    }

    /// Takes back `step`, the step the last `apply` returned, and folds the record as if it had
    /// been rejected: every user it changed gets back the state (and timer) it had before, the
    /// log time goes back to `logTimeBefore`, and then only the timers that were due at the
    /// record's time fire again, with the same ids (`advance` from the same coordinates). The
    /// result is byte for byte the step `apply` returns when the processor throws `error`.
    ///
    /// Why: some reasons to refuse a record are only known from what its step produced (an
    /// output or a state image over its size bound, `RecordLimits`); checking after the step
    /// costs nothing on the common path, where nothing is refused.
    @inlinable
    public mutating func reject(
        _ step: FoldStep<P.State>, logTimeBefore: Timestamp?, timestamp: Timestamp, coordinates: SourceCoordinates,
        originIndex: Int? = nil, firstIndex: Int = 0, error: RecordError
    ) -> FoldStep<P.State> {
        for position in 0..<step.changeCount {
            let user = step.changedUser(at: position)
            if let before = step.before(at: position) {
                storedStates[user] = before
                timers.update(user, to: processor.nextWakeUp(before))
            } else {
                storedStates[user] = nil
                timers.update(user, to: nil)
            }
        }
        storedLogTime = logTimeBefore
        var again = advance(to: timestamp, origin: coordinates, originIndex: originIndex, firstIndex: firstIndex)
        again.deadLetter = error
        // Timers dropped by `step` stay dropped (they produced nothing); still report them.
        again.undecodable = step.undecodable + again.undecodable
        return again
    }

    /// Fires due users in (time, user id) order, each with `now` = its due time (or the log
    /// time, if later).
    ///
    /// A processor must report, after firing, a next wake-up later than the time it fired at.
    /// One that does not is held back until the step ends (`TimerSchedule.rescheduleFired`), so
    /// it fires again on the next step instead of spinning this one.
    @inlinable
    mutating func fireTimers(dueBy limit: Timestamp, into step: inout FoldStep<P.State>) {
        while let (user, due) = timers.popDue(by: limit) {
            let now = max(due, storedLogTime ?? due)
            storedLogTime = now
            let stored: [String: P.State].Index?
            do {
                stored = try storedIndex(of: user)
            } catch {
                step.undecodable.append(UndecodableState(userId: user, error: error))
                timers.rescheduleFired(user, to: nil, firedAt: now)
                continue
            }
            var state = state(at: stored, of: user)
            var context = ProcessingContext(now: now, userId: user, ids: step.ids)
            processor.fireTimers(state: &state, context: &context)
            step.ids = context.ids
            step.take(context.takeOutputs())
            let wakeUp = processor.nextWakeUp(state)
            keep(consume state, for: user, at: stored, into: &step)
            timers.rescheduleFired(user, to: wakeUp, firedAt: now)
        }
    }

    /// Where `user`'s stored state is in `storedStates`, decoding a held image on this first
    /// touch (nil: a user without one). The one place a step finds a user's state, for records
    /// and timers alike; the index stays valid until the step keeps the user's new state.
    @inlinable
    mutating func storedIndex(of user: String) throws(StateImageError) -> [String: P.State].Index? {
        if let index = storedStates.index(forKey: user) { return index }
        guard !heldImages.isEmpty, try decodeHeld(user) != nil else { return nil }
        return storedStates.index(forKey: user)
    }

    /// A copy of the stored state at `stored`, for the step to change; the initial state of
    /// `user` when there is none.
    @inlinable
    func state(at stored: [String: P.State].Index?, of user: String) -> P.State {
        if let stored { return storedStates.values[stored] }
        return processor.initialState(userId: user)
    }

    /// Decodes `user`'s held image, if it has one, and keeps the state decoded from then on. A
    /// failure leaves the image held.
    @inlinable
    mutating func decodeHeld(_ user: String) throws(StateImageError) -> P.State? {
        guard let held = heldImages[user] else { return nil }
        guard let decodeImage else { throw StateImageError("no decoder for a held state image") }
        let state = try decodeImage(held.image)
        heldImages[user] = nil
        storedStates[user] = state
        return state
    }

    /// Keeps `state` if it differs from where the step started (the stored state at `stored`,
    /// or the initial one of a user never stored) and says whether it did: unchanged users cost
    /// no changelog record, users a record did not change are not kept in memory, and an
    /// unchanged state has the same wake-up as before.
    ///
    /// The stored state is compared and swapped where it lies, and the state it held moves into
    /// the step as the change's `before`. A state copy is a retain per collection it holds:
    /// taking `before` out as a copy, then storing and recording copies of the new state, made
    /// five copies of a state per step; now there are two, the one the step changes and the
    /// change's `after` (`Benchmarks/FoldProfile`: 2.776G → 2.646G instructions, −4.7 %).
    /// The `after` is a copy of the local state, not the table's getter: that copied it twice.
    /// Recording `.users`, there is no `after` to copy: one state copy per step.
    @inlinable @discardableResult
    mutating func keep(
        _ state: consuming P.State, for user: String, at stored: [String: P.State].Index?, into step: inout FoldStep<P.State>
    ) -> Bool {
        guard let stored else {
            if state == processor.initialState(userId: user) { return false }
            switch recording {
            case .states:
                storedStates[user] = copy state
                step.recordChange(of: user, before: nil, after: state)
            case .users:
                storedStates[user] = state
                step.recordUser(user, before: nil)
            }
            return true
        }
        if Self.isUnchanged(&storedStates.values[stored], state) { return false }
        switch recording {
        case .states:
            // The change's `after` is copied from the new state before the swap: read back from
            // the table afterwards (`values[stored]`'s getter), the state was copied twice.
            let after = copy state
            swap(&state, &storedStates.values[stored])
            step.recordChange(of: user, before: state, after: after)
        case .users:
            swap(&state, &storedStates.values[stored])
            step.recordUser(user, before: state)
        }
        return true
    }

    /// `stored == state`, with `stored` reached in place (a getter would copy it first).
    @inlinable
    static func isUnchanged(_ stored: inout P.State, _ state: borrowing P.State) -> Bool { stored == state }
}

/// What one fold step produced: the outputs in order, the users whose state changed, and the
/// error of a rejected record.
public struct FoldStep<State: Codable & Hashable & Sendable>: Sendable {
    /// Every output, in the order produced: fired timers in (time, user) order, then the record's.
    public var outputs: [OutputRecord] = []
    /// Set when the processor rejected the record: it goes to `<topic>.dlq`, nothing else
    /// about it happened.
    public var deadLetter: RecordError?
    /// The ids handed out so far: `ids.origin` is the step's coordinates, `ids.nextIndex` where
    /// a later step at the same coordinates must start to keep ids unique.
    public var ids: OutputIDs
    /// The positions in `outputs` of what the record itself produced (the rest are timers'),
    /// and the record's user: what a bound check may refuse the record for.
    public var recordOutputs: Range<Int> = 0..<0
    public var recordUser: String?
    /// Users whose timer came due while their state was still a held image that does not
    /// decode: their timers were dropped (see `PartitionFold`); the runtime reports them.
    public var undecodable: [UndecodableState] = []

    /// The changes, recording `.states`.
    @usableFromInline var changeList: [StateChange<State>] = []
    /// The changed users with their states before the step, recording `.users`. One of the two
    /// lists stays empty.
    @usableFromInline var userList: [ChangedUser<State>] = []
    /// Positions in the list by user, built only once a step changes many users (a tick
    /// after a quiet night fires every user's 09:00 digest), so the common one-user step
    /// allocates no index.
    @usableFromInline var changeIndex: [String: Int] = [:]

    @inlinable
    init(ids: OutputIDs) { self.ids = ids }

    /// One entry per user whose state changed in this step, in the order of their first change;
    /// `before` is the state at the start of the step (`nil` for a user never stored), `after`
    /// at its end (it can equal `before` if a timer and the record undid each other). Replay
    /// and explain read both. Empty when the fold records `.users` (see `changedUser(at:)`).
    @inlinable public var changes: [StateChange<State>] { changeList }

    /// How many users' states changed, whatever the fold records.
    @inlinable public var changeCount: Int { userList.isEmpty ? changeList.count : userList.count }

    /// The user of the change at `position` (below `changeCount`), whatever the fold records.
    /// Its state after the step is the one the fold holds once the step is done.
    @inlinable
    public func changedUser(at position: Int) -> String {
        userList.isEmpty ? changeList[position].userId : userList[position].userId
    }

    /// The state of the change at `position` at the start of the step (nil for a user never
    /// stored), whatever the fold records.
    @inlinable
    public func before(at position: Int) -> State? {
        userList.isEmpty ? changeList[position].before : userList[position].before
    }

    /// The index the next id from these coordinates would take.
    @inlinable public var nextIndex: Int { ids.nextIndex }

    /// Appends a processor call's outputs, taken from its context (`takeOutputs()`). The first
    /// call's list becomes the step's own (a record with no timer due before it, the common
    /// step), so its outputs are not copied one by one into a new list; a later call's outputs
    /// are moved over one by one (`append(contentsOf:)` copied each, a retain of every string
    /// it holds, and released them with the list).
    @inlinable
    mutating func take(_ produced: consuming [OutputRecord]) {
        if outputs.isEmpty {
            outputs = produced
            return
        }
        // No `reserveCapacity` to the exact count: a tick that fires thousands of timers takes
        // each one's outputs here, and an exact reservation reallocated the list every time.
        var rest = produced
        rest.reverseForPopping()
        while let output = rest.popLast() { outputs.append(output) }
    }

    /// `before` and `after` are taken, not copied: the fold hands over its last use of each.
    @inlinable
    mutating func recordChange(of user: String, before: consuming State?, after: consuming State) {
        if let position = position(of: user) {
            changeList[position].after = after
            return
        }
        changeList.append(StateChange(userId: user, before: before, after: after))
        if !changeIndex.isEmpty { changeIndex[user] = changeList.count - 1 }
    }

    /// `recordChange` without the state after: a user changed again keeps its first `before`.
    @inlinable
    mutating func recordUser(_ user: String, before: consuming State?) {
        if position(of: user) != nil { return }
        userList.append(ChangedUser(userId: user, before: before))
        if !changeIndex.isEmpty { changeIndex[user] = userList.count - 1 }
    }

    /// Where `user` is among the changes, if it changed already.
    @inlinable
    mutating func position(of user: String) -> Int? {
        if !changeIndex.isEmpty { return changeIndex[user] }
        let count = changeCount
        if count < 16 {
            return userList.isEmpty ? changeList.firstIndex { $0.userId == user } : userList.firstIndex { $0.userId == user }
        }
        for position in 0..<count { changeIndex[changedUser(at: position)] = position }
        return changeIndex[user]
    }
}

/// What a fold step keeps of each user whose state it changed (`PartitionFold.recording`).
public enum ChangeRecording: Sendable {
    /// The user and its states before and after the step (`FoldStep.changes`): what replay,
    /// explain and the simulator compare and show.
    case states
    /// The user and its state before the step (`FoldStep.changedUser(at:)`,
    /// `FoldStep.before(at:)`), which undoes a refused record; `changes` stays empty. Why: the
    /// runtime writes each changed user's image from the fold's own table when it seals a
    /// unit, so the copy of every changed state per step, a retain of each list the state
    /// holds and a release when the step was dropped, bought it nothing.
    case users
}

/// A user whose state a step changed, with its state before the step (recording `.users`).
@usableFromInline
struct ChangedUser<State: Sendable>: Sendable {
    @usableFromInline var userId: String
    @usableFromInline var before: State?

    @inlinable
    init(userId: String, before: consuming State?) {
        self.userId = userId; self.before = before
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
