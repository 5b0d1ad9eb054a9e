import FleetModel
import FleetOperations
import FleetWorkers
import Kafka
import PropertyBased
import Testing

/// `fleetctl explain`'s re-fold of the commit units that changed a user more than once
/// (`UnitRefold`), each unit on its own from the images at its start of only the users it folds,
/// against the uninterrupted fold of the whole log (DESIGN.md principle 6; P-AUDIT explain's
/// per-input state lines are the fold's).
@Suite struct UnitRefoldTests {
    @Test("the re-folded state of a user before and after each input of a multi-change unit is the uninterrupted fold's")
    func refoldedStepsAreTheFolds() async {
        await propertyCheck(count: 300, input: LogEntry.logs) { entries in
            for mode in UnitHistoryReplayTests.modes {
                let recorded = RecordedLog(entries, history: mode)
                for user in ["u0", "u1", "u2"] {
                    Self.check(recorded, user: user, mode: "\(mode)")
                }
            }
        }
    }

    @Test("another user's record the processor rejects inside the unit: the user's timer fires at the log time it moved to")
    func rejectedRecordOfAnotherUser() throws {
        let entries = [
            LogEntry(kind: .action(user: "u2", action: "count"), dt: 0, commitAfter: true),
            LogEntry(kind: .action(user: "u0", action: "alarm"), dt: 10, commitAfter: false),
            LogEntry(kind: .action(user: "u0", action: "count"), dt: 10, commitAfter: false),
            LogEntry(kind: .action(user: "u1", action: "reject"), dt: 100, commitAfter: false),
            LogEntry(kind: .action(user: "u0", action: "count"), dt: 5, commitAfter: true),
        ]
        let recorded = RecordedLog(entries, history: .perUnit)
        #expect(recorded.deadLetters.count == 1)
        let steps = Self.check(recorded, user: "u0", mode: "rejected")
        // The rejected record at offset 3 fired u0's alarm (due 90 s after offset 1).
        let fired = try #require(steps[Self.coordinates(3)])
        #expect(fired.before?.wake != nil && fired.after.wake == nil)
        #expect(Set(steps.keys.map(\.offset)) == [1, 2, 3, 4])
    }

    @Test("a record that does not decode inside the unit does not move the log time, so the user's timer waits")
    func undecodableRecordDoesNotMoveTime() throws {
        let entries = [
            LogEntry(kind: .action(user: "u2", action: "count"), dt: 0, commitAfter: true),
            LogEntry(kind: .action(user: "u0", action: "alarm"), dt: 10, commitAfter: false),
            LogEntry(kind: .garbage, dt: 100, commitAfter: false),
            LogEntry(kind: .action(user: "u1", action: "count"), dt: -50, commitAfter: false),
            LogEntry(kind: .action(user: "u0", action: "count"), dt: 5, commitAfter: true),
        ]
        let recorded = RecordedLog(entries, history: .perUnit)
        let steps = Self.check(recorded, user: "u0", mode: "undecodable")
        // The garbage at offset 2 (stamped 100 s after the alarm) leaves the log time at the
        // alarm's; u1's record at offset 3 and u0's at 4 are stamped 50 and 55 s after it, before
        // the alarm is due (90 s): it stays pending.
        let last = try #require(steps[Self.coordinates(4)])
        #expect(last.after.wake != nil && last.after.count == 2)
    }

    @Test("the user's timer fires inside the unit at another user's record, from the log time at the unit's start")
    func timerFiresAtAnotherUsersRecord() throws {
        let entries = [
            LogEntry(kind: .action(user: "u0", action: "alarm"), dt: 0, commitAfter: true),
            LogEntry(kind: .action(user: "u0", action: "count"), dt: 20, commitAfter: false),
            LogEntry(kind: .action(user: "u1", action: "count"), dt: 80, commitAfter: false),
            LogEntry(kind: .action(user: "u0", action: "count"), dt: 5, commitAfter: true),
        ]
        let recorded = RecordedLog(entries, history: .perUnit)
        let steps = Self.check(recorded, user: "u0", mode: "timer")
        let fired = try #require(steps[Self.coordinates(2)])
        #expect(fired.before?.wake != nil && fired.after.wake == nil && fired.after.count == 2)
        #expect(Set(steps.keys.map(\.offset)) == [1, 2, 3])
    }

    /// Re-folds `user`'s multi-change units of `recorded` and checks every step against the
    /// recording's fold; also that every change of a multi-change unit has its step.
    @discardableResult
    static func check(_ recorded: RecordedLog, user: String, mode: String) -> [SourceCoordinates: UnitRefold<CounterProcessor>.Step] {
        let images: [HistoryChange<CounterProcessor.State>]
        do {
            images = try recorded.historyChanges().filter { $0.userId == user }
        } catch {
            Issue.record("the recording does not decode: \(error)")
            return [:]
        }
        let steps: [SourceCoordinates: UnitRefold<CounterProcessor>.Step]
        do {
            steps = try UnitRefold.refold(
                user: user, images: images, processor: CounterProcessor(), log: recorded.log, history: recorded.history,
                changelog: recorded.changelog)
        } catch {
            Issue.record("re-fold failed: \(error)")
            return [:]
        }
        let expected = Set(images.filter { $0.form == .unitImage && $0.changed.count > 1 }.flatMap(\.changed))
        #expect(Set(steps.keys.map(\.offset)) == expected, "\(mode) \(user): re-folded offsets")
        for (position, step) in steps {
            let offset = Int(position.offset)
            #expect(step.before == recorded.before[offset].states[user], "\(mode) \(user): before offset \(offset)")
            #expect(step.after == recorded.before[offset + 1].states[user], "\(mode) \(user): after offset \(offset)")
            #expect(step.logTime == recorded.before[offset + 1].logTime, "\(mode) \(user): log time after offset \(offset)")
        }
        return steps
    }

    static func coordinates(_ offset: Int64) -> SourceCoordinates {
        SourceCoordinates(topic: RecordedLog.topics.folded, partition: RecordedLog.partition, offset: offset)
    }
}
