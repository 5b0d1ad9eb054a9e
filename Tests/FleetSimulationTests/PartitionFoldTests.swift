import FleetModel
import Testing

// The per-partition fold of DESIGN.md principle 3 and "Time", with toy processors.

@Suite struct PartitionFoldTests {
    @Test func timersFireInTimeOrderBeforeALaterRecordWithNowAtTheirDueTime() {
        var fold = PartitionFold(processor: AlarmProcessor())
        _ = fold.apply(action("a", "in:100"), timestamp: at(0), coordinates: coordinates(0))
        _ = fold.apply(action("b", "in:50"), timestamp: at(10), coordinates: coordinates(1))
        _ = fold.apply(action("a", "in:30"), timestamp: at(20), coordinates: coordinates(2))
        let step = fold.apply(action("c", "in:5"), timestamp: at(200), coordinates: coordinates(3))

        #expect(step.outputs.map(line) == [
            #"2026-03-02T08:00:50Z toy.out {"event":"rang","id":"toy.in:0:3:0","properties":{"due":"2026-03-02T08:00:50Z"},"type":"retention.event","user_id":"a","v":1}"#,
            #"2026-03-02T08:01:00Z toy.out {"event":"rang","id":"toy.in:0:3:1","properties":{"due":"2026-03-02T08:01:00Z"},"type":"retention.event","user_id":"b","v":1}"#,
            #"2026-03-02T08:01:40Z toy.out {"event":"rang","id":"toy.in:0:3:2","properties":{"due":"2026-03-02T08:01:40Z"},"type":"retention.event","user_id":"a","v":1}"#,
            #"2026-03-02T08:03:20Z toy.out {"event":"armed","id":"toy.in:0:3:3","properties":{"due":"2026-03-02T08:03:25Z"},"type":"retention.event","user_id":"c","v":1}"#,
        ])
        #expect(fold.logTime == at(200))
        #expect(fold.nextWakeUp == at(205))
    }

    @Test func usersDueAtTheSameTimeFireInUserIdOrder() {
        var fold = PartitionFold(processor: AlarmProcessor())
        for (offset, user) in ["m", "z", "a", "k"].enumerated() {
            _ = fold.apply(action(user, "in:60"), timestamp: at(0), coordinates: coordinates(Int64(offset)))
        }
        let step = fold.apply(tick(), timestamp: at(60), coordinates: coordinates(4))
        #expect(step.outputs.map(\.record.userId) == ["a", "k", "m", "z"])
        #expect(step.outputs.map(\.record.id) == ["toy.in:0:4:0", "toy.in:0:4:1", "toy.in:0:4:2", "toy.in:0:4:3"])
    }

    @Test func aTickOnlyAdvancesTimeAndFiresWhatIsDue() {
        var fold = PartitionFold(processor: AlarmProcessor())
        _ = fold.apply(action("a", "in:30"), timestamp: at(0), coordinates: coordinates(0))
        let early = fold.apply(tick(), timestamp: at(29), coordinates: coordinates(1))
        #expect(early.outputs.isEmpty)
        #expect(early.changes.isEmpty)
        #expect(fold.logTime == at(29))
        let due = fold.apply(tick(), timestamp: at(31), coordinates: coordinates(2))
        #expect(due.outputs.map { $0.timestamp } == [at(30)])
        #expect(fold.states.keys.sorted() == ["a"])  // the tick's empty user is never stored
        #expect(fold.logTime == at(31))
    }

    @Test func aRecordStampedBeforeTheLogTimeIsProcessedAtTheLogTime() {
        var fold = PartitionFold(processor: AlarmProcessor())
        _ = fold.apply(tick(), timestamp: at(100), coordinates: coordinates(0))
        let step = fold.apply(action("a", "in:10"), timestamp: at(40), coordinates: coordinates(1))
        #expect(fold.logTime == at(100))
        #expect(step.outputs.map(\.timestamp) == [at(100)])
        #expect(fold.nextWakeUp == at(110))
    }

    @Test func aTimerTheRecordMakesDueFiresInTheSameStepAfterIt() {
        var fold = PartitionFold(processor: AlarmProcessor())
        let step = fold.apply(action("a", "in:0"), timestamp: at(5), coordinates: coordinates(0))
        #expect(step.outputs.map { $0.record.toyEvent?.name } == ["armed", "rang"])
        #expect(step.outputs.map(\.record.id) == ["toy.in:0:0:0", "toy.in:0:0:1"])
        #expect(fold.nextWakeUp == nil)
    }

    // P-DLQ (DESIGN principle 7): a rejected record changes nothing and the partition goes on.
    @Test func aRejectedRecordLeavesTheStateUntouchedAndThePartitionContinues() {
        var fold = PartitionFold(processor: AlarmProcessor())
        _ = fold.apply(action("a", "in:50"), timestamp: at(0), coordinates: coordinates(0))
        let before = fold.states
        let rejected = fold.apply(action("a", "reject"), timestamp: at(10), coordinates: coordinates(1))
        #expect(rejected.deadLetter == RecordError("alarm command 'reject' refused"))
        #expect(rejected.outputs.isEmpty)
        #expect(rejected.changes.isEmpty)
        #expect(fold.states == before)
        #expect(fold.nextWakeUp == at(50))

        let next = fold.apply(action("a", "in:5"), timestamp: at(20), coordinates: coordinates(2))
        #expect(next.deadLetter == nil)
        #expect(next.outputs.map(\.record.id) == ["toy.in:0:2:0"])
        #expect(fold.states["a"]?.alarms.map(\.due) == [at(25), at(50)])
    }

    @Test func aRejectedRecordKeepsTheTimersItMadeDue() {
        var fold = PartitionFold(processor: CounterProcessor())
        let step = fold.apply(action("a", "reject"), timestamp: at(0), coordinates: coordinates(0))
        #expect(step.deadLetter != nil)
        #expect(fold.states.isEmpty)  // a user whose only record was rejected is not stored

        var alarms = PartitionFold(processor: AlarmProcessor())
        _ = alarms.apply(action("b", "in:10"), timestamp: at(0), coordinates: coordinates(0))
        let mixed = alarms.apply(action("a", "reject"), timestamp: at(20), coordinates: coordinates(1))
        #expect(mixed.deadLetter != nil)
        #expect(mixed.outputs.map(\.record.id) == ["toy.in:0:1:0"])  // b's alarm, fired before the record
        #expect(mixed.changes.map(\.userId) == ["b"])
    }

    @Test func aRecordWithoutUserIsDeadLettered() {
        var fold = PartitionFold(processor: CounterProcessor())
        let step = fold.apply(action("", "count"), timestamp: at(0), coordinates: coordinates(0))
        #expect(step.deadLetter == RecordError("record of type 'user.action' has no user_id"))
        #expect(fold.states.isEmpty)
    }

    @Test func changesCarryBeforeAndAfterOncePerUserPerStep() throws {
        var fold = PartitionFold(processor: AlarmProcessor())
        let first = fold.apply(action("a", "in:10"), timestamp: at(0), coordinates: coordinates(0))
        #expect(first.changes.count == 1)
        #expect(first.changes[0].before == nil)
        #expect(first.changes[0].after.alarms.count == 1)

        _ = fold.apply(action("a", "in:20"), timestamp: at(1), coordinates: coordinates(1))
        // Both of a's alarms fire on the way to 30 and the record re-arms it: one change.
        let step = fold.apply(action("a", "in:5"), timestamp: at(30), coordinates: coordinates(2))
        let change = try #require(step.changes.first)
        #expect(step.changes.count == 1)
        #expect(change.before?.alarms.map(\.due) == [at(10), at(21)])
        #expect(change.after.alarms.map(\.due) == [at(35)])
        #expect(change.after.fired == 2)
    }

    @Test func manyUsersChangedInOneStepAreEachReportedOnce() {
        var fold = PartitionFold(processor: AlarmProcessor())
        let users = (0..<40).map { "user-\($0)" }
        for (offset, user) in users.enumerated() {
            _ = fold.apply(action(user, "in:10"), timestamp: at(0), coordinates: coordinates(Int64(2 * offset)))
            _ = fold.apply(action(user, "in:20"), timestamp: at(0), coordinates: coordinates(Int64(2 * offset + 1)))
        }
        let step = fold.apply(tick(), timestamp: at(100), coordinates: coordinates(80))
        #expect(step.outputs.count == 80)
        #expect(step.changes.map(\.userId) == users.sorted())
        #expect(step.changes.allSatisfy { $0.after.fired == 2 && $0.before?.fired == 0 })
    }

    /// Recording `.users` (what the runtime does with binary images) names the same users in
    /// the same order with the same states before the step as recording `.states`, leaves
    /// `changes` empty, and folds exactly the same: outputs, states and timers. Covered: one
    /// user changed twice in a step (a timer, then the record), more than 16 users in one step
    /// (the position index), a new user, a rejected record, and `reject` of a step.
    @Test func recordingUsersNamesTheSameChangesAsRecordingStates() {
        var states = PartitionFold(processor: AlarmProcessor())
        var users = PartitionFold(processor: AlarmProcessor())
        users.recording = .users
        var log: [FleetRecord] = []
        for n in 0..<40 { log.append(action("user-\(n)", "in:\(10 + n % 3)")) }
        log += [tick(), action("user-1", "in:5"), action("a", "repeat:2"), action("a", "reject"), tick()]
        log += [action("a", "in:1"), action("b", "in:30"), tick(), action("b", "clear")]
        for (offset, record) in log.enumerated() {
            let time = at(Int64(offset) * 4)
            let full = states.apply(record, timestamp: time, coordinates: coordinates(Int64(offset)))
            let light = users.apply(record, timestamp: time, coordinates: coordinates(Int64(offset)))
            #expect(light.outputs == full.outputs)
            #expect(light.deadLetter == full.deadLetter)
            #expect(light.changes.isEmpty)
            #expect(light.changeCount == full.changes.count)
            #expect((0..<light.changeCount).map { light.changedUser(at: $0) } == full.changes.map(\.userId))
            #expect((0..<light.changeCount).map { light.before(at: $0) } == full.changes.map(\.before))
            #expect((0..<full.changeCount).map { full.changedUser(at: $0) } == full.changes.map(\.userId))
            #expect(users.states == states.states)
            #expect(users.nextWakeUp == states.nextWakeUp)
        }
        #expect(users.states.count == 42)

        // Taking a step back restores the same states and timers under either recording.
        let time = at(1_000)
        let logTime = states.logTime
        let full = states.apply(action("b", "in:7"), timestamp: time, coordinates: coordinates(100))
        let light = users.apply(action("b", "in:7"), timestamp: time, coordinates: coordinates(100))
        #expect(light.changeCount > 1)  // the due alarms of others fired first
        let error = RecordError("refused after the step")
        let fullAgain = states.reject(full, logTimeBefore: logTime, timestamp: time, coordinates: coordinates(100), error: error)
        let lightAgain = users.reject(light, logTimeBefore: logTime, timestamp: time, coordinates: coordinates(100), error: error)
        #expect(lightAgain.outputs == fullAgain.outputs)
        #expect((0..<lightAgain.changeCount).map { lightAgain.changedUser(at: $0) } == fullAgain.changes.map(\.userId))
        #expect(users.states == states.states)
        #expect(users.states["b"]?.alarms.isEmpty == true)
        #expect(users.nextWakeUp == states.nextWakeUp)
    }

    /// `withState` (the runtime's seal reads each changed user's state through it) lends the
    /// stored state itself, nil for a user without one, and changes nothing.
    @Test func aStoredStateIsLentAsItIs() {
        var fold = PartitionFold(processor: AlarmProcessor())
        _ = fold.apply(action("a", "in:10"), timestamp: at(0), coordinates: coordinates(0))
        _ = fold.apply(action("a", "in:20"), timestamp: at(1), coordinates: coordinates(1))
        let before = fold.states
        #expect(fold.withState(of: "a") { $0 } == before["a"])
        #expect(fold.withState(of: "a") { $0.alarms.map(\.due) } == [at(10), at(21)])
        #expect(fold.withState(of: "nobody") { _ in true } == nil)
        #expect(fold.states == before)
        #expect(fold.nextWakeUp == at(10))
    }

    @Test func restoringRebuildsTheTimersFromTheStates() {
        var original = PartitionFold(processor: AlarmProcessor())
        _ = original.apply(action("a", "in:50"), timestamp: at(0), coordinates: coordinates(0))
        _ = original.apply(action("b", "in:40"), timestamp: at(0), coordinates: coordinates(1))
        var restored = PartitionFold(processor: AlarmProcessor(), restoring: original.states, logTime: original.logTime)
        #expect(restored.nextWakeUp == at(40))
        let a = original.apply(tick(), timestamp: at(60), coordinates: coordinates(2))
        let b = restored.apply(tick(), timestamp: at(60), coordinates: coordinates(2))
        #expect(a.outputs == b.outputs)
        #expect(a.outputs.count == 2)
    }

    @Test func advancingFiresTimersAndMovesTimeWithoutARecord() {
        var fold = PartitionFold(processor: AlarmProcessor())
        _ = fold.apply(action("a", "in:10"), timestamp: at(0), coordinates: coordinates(0))
        let step = fold.advance(to: at(15), origin: coordinates(1), firstIndex: 0)
        #expect(step.outputs.map(\.record.id) == ["toy.in:0:1:0"])
        #expect(step.nextIndex == 1)
        #expect(fold.logTime == at(15))
        let backwards = fold.advance(to: at(3), origin: coordinates(1), firstIndex: 1)
        #expect(backwards.outputs.isEmpty)
        #expect(fold.logTime == at(15))
    }

    /// A processor whose wake-up stays in the past would make a naive loop spin forever.
    @Test func aProcessorWhoseWakeUpStaysDueFiresOncePerStepInsteadOfSpinning() {
        var fold = PartitionFold(processor: StuckAlarmProcessor(stuckAt: at(0)))
        _ = fold.apply(action("a", "x"), timestamp: at(10), coordinates: coordinates(0))
        #expect(fold.states["a"]?.fired == 1)
        _ = fold.apply(tick(), timestamp: at(20), coordinates: coordinates(1))
        #expect(fold.states["a"]?.fired == 2)
    }

    @Test func reArmingOneUserManyTimesFiresEachAlarmOnce() {
        var fold = PartitionFold(processor: AlarmProcessor())
        var outputs: [OutputRecord] = []
        for offset in 0..<400 {
            // Alternate a far and a near alarm so the user's wake-up moves back and forth,
            // leaving stale heap entries behind.
            let command = offset.isMultiple(of: 2) ? "in:100000" : "in:\(offset)"
            outputs += fold.apply(action("a", command), timestamp: at(0), coordinates: coordinates(Int64(offset))).outputs
        }
        outputs += fold.apply(tick(), timestamp: at(200_000), coordinates: coordinates(400)).outputs
        let rang = outputs.filter { $0.record.toyEvent?.name == "rang" }
        #expect(rang.count == 400)
        #expect(rang.map(\.timestamp) == rang.map(\.timestamp).sorted())
        #expect(fold.nextWakeUp == nil)
        // 200 distinct near alarms plus one call for the 200 far ones due together; the stale
        // heap entries the re-arming left behind never reach the processor.
        #expect(fold.states["a"]?.wakeCalls == 201)
    }
}
