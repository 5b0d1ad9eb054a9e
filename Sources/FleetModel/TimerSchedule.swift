import HeapModule

/// The timer half of `PartitionFold`: every scheduled user's next wake-up, in a min-heap with
/// lazy invalidation.
///
/// Re-scheduling a user does not search the heap for its old entry; it records the new time in
/// `scheduled` and pushes a new entry, and a popped entry that no longer matches `scheduled`
/// is skipped. Pops and pushes are O(log n). The heap is rebuilt once stale entries outnumber
/// live ones, which keeps it within a constant factor of the number of scheduled users.
///
/// Not generic, so it is compiled once, and `PartitionFold`'s inlinable code calls it without
/// exposing the heap module to the fold's clients.
@usableFromInline
struct TimerSchedule: Sendable {
    /// The live wake-up of each scheduled user.
    private var scheduled: [String: Timestamp] = [:]
    private var heap = Heap<WakeUp>()
    /// Overdue wake-ups held back until the end of the current fold step.
    private var postponed: [WakeUp] = []

    @usableFromInline
    init() {}

    /// A schedule rebuilt from restored states. Heap order is (time, user id), a total order,
    /// so the order of `wakeUps` cannot change what fires first.
    @usableFromInline
    init(_ wakeUps: [String: Timestamp]) {
        scheduled = wakeUps
        heap = Heap(wakeUps.map { WakeUp(due: $0.value, user: $0.key) })
    }

    /// The earliest live wake-up. Stale entries are removed after every change, so the top of the
    /// heap is always live.
    @usableFromInline
    var next: Timestamp? { heap.min?.due }

    /// Removes and returns the earliest wake-up due at or before `limit`.
    ///
    /// The caller fires the user's timers and then must call `rescheduleFired`.
    @usableFromInline
    mutating func popDue(by limit: Timestamp) -> (user: String, due: Timestamp)? {
        while let top = heap.min, top.due <= limit {
            heap.removeMin()
            if scheduled[top.user] == top.due { return (top.user, top.due) }
        }
        return nil
    }

    /// Records `user`'s wake-up after a record changed its state (its entry, if any, is still
    /// in the heap).
    @usableFromInline
    mutating func update(_ user: String, to due: Timestamp?) {
        forgetPostponed(user)
        guard let due else {
            if scheduled.removeValue(forKey: user) != nil { dropStaleTop(changed: user) }
            return
        }
        if scheduled.updateValue(due, forKey: user) == due { return }
        heap.insert(WakeUp(due: due, user: user))
        dropStaleTop(changed: user)
    }

    /// Records `user`'s wake-up after its timers fired (its entry was just popped). A wake-up
    /// at or before `firedAt` breaks the processor contract; it is held back until
    /// `endOfStep()` so the step cannot spin on it.
    ///
    /// A postponed user counts as unscheduled until then, so no older heap entry with the same
    /// time can fire it again in this step either.
    @usableFromInline
    mutating func rescheduleFired(_ user: String, to due: Timestamp?, firedAt: Timestamp) {
        forgetPostponed(user)
        if let due, due > firedAt {
            scheduled[user] = due
            heap.insert(WakeUp(due: due, user: user))
        } else {
            scheduled[user] = nil
            if let due { postponed.append(WakeUp(due: due, user: user)) }
        }
        dropStaleTop()
    }

    /// Ends a fold step: postponed wake-ups become due again, for the next step.
    @usableFromInline
    mutating func endOfStep() {
        var changed = !postponed.isEmpty
        for entry in postponed {
            scheduled[entry.user] = entry.due
            heap.insert(entry)
        }
        postponed.removeAll(keepingCapacity: true)
        if heap.count > 2 * scheduled.count + 64 {
            heap = Heap(scheduled.map { WakeUp(due: $0.value, user: $0.key) })
            changed = true
        }
        // Every other change already left a live top.
        if changed { dropStaleTop() }
    }

    /// A newer wake-up of a postponed user replaces the postponed one.
    private mutating func forgetPostponed(_ user: String) {
        if !postponed.isEmpty { postponed.removeAll { $0.user == user } }
    }

    private mutating func dropStaleTop() {
        while let top = heap.min, scheduled[top.user] != top.due { heap.removeMin() }
    }

    /// `dropStaleTop()` after a change to `user`'s wake-up alone, when the top was live before
    /// it: then the top can only be stale if it is `user`'s, and another user's top needs no
    /// lookup. Every record's step ends with such a change, and the lookup hashed a user id
    /// (`Benchmarks/README.md`, "Runtime, tenth round").
    private mutating func dropStaleTop(changed user: String) {
        guard let top = heap.min, top.user == user else { return }
        dropStaleTop()
    }
}

/// One entry of the timer heap, ordered by due time, then user id, so equal times fire in an
/// order that is the same in every process.
struct WakeUp: Comparable, Sendable {
    var due: Timestamp
    var user: String

    static func < (lhs: WakeUp, rhs: WakeUp) -> Bool {
        lhs.due != rhs.due ? lhs.due < rhs.due : lhs.user < rhs.user
    }
}
