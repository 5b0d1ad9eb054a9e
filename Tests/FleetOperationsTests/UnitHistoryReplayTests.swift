import FleetModel
import FleetOperations
import FleetWorkers
import Kafka
import PropertyBased
import Testing

/// Replay over a history of one image per changed user per commit unit (no before-images), over
/// random logs and unit boundaries, with and without the images of at-least-once attempts that
/// were acknowledged but never committed (other unit boundaries): the fold re-folded from the
/// nearest images is the fold's before every offset, and a replay of any range is identical to
/// the recording (DESIGN.md principle 6).
@Suite struct UnitHistoryReplayTests {
    static let modes: [RecordedLog.HistoryMode] = [.perUnit, .perUnitWithUncommittedAttempts]

    @Test("the fold re-folded from the nearest unit images is exactly the fold's before every offset")
    func refoldFromImagesIsTheFolds() async {
        await propertyCheck(count: 200, input: LogEntry.logs) { entries in
            for mode in Self.modes {
                let recorded = RecordedLog(entries, history: mode)
                for start in 0...recorded.log.count {
                    guard let rebuilt = Self.refold(recorded, before: Int64(start)) else {
                        Issue.record("the recording does not decode")
                        return
                    }
                    #expect(rebuilt.states == recorded.before[start].states, "\(mode): states before offset \(start)")
                    #expect(rebuilt.logTime == recorded.before[start].logTime, "\(mode): log time before offset \(start)")
                }
            }
        }
    }

    @Test("replaying any range over unit images, for the partition or one user, reproduces outputs, dead letters and history")
    func anyRangeReplaysIdentically() async {
        await propertyCheck(count: 200, input: ReplayPropertyTests.cases) { entries, a, b in
            let from = Int64(min(a, b, entries.count)), to = Int64(min(max(a, b), entries.count))
            let range = ReplayRange(partition: RecordedLog.partition, from: from, to: to)
            for mode in Self.modes {
                let recorded = RecordedLog(entries, history: mode)
                for user in [nil, "u1"] {
                    let comparison = Self.replay(recorded, range: range, user: user, processor: CounterProcessor())
                    #expect(comparison?.isIdentical == true, "\(mode) \(range): \(comparison?.render() ?? "replay failed")")
                }
            }
        }
    }

    @Test("a replay over unit images with different logic reports the changed images (replay can fail)")
    func differentLogicIsReported() throws {
        let entries = (0..<6).map { LogEntry(kind: .action(user: "u\($0 % 2)", action: "count"), dt: 60, commitAfter: $0 == 3) }
        let recorded = RecordedLog(entries, history: .perUnit)
        let range = ReplayRange(partition: RecordedLog.partition, from: 2, to: 6)
        let comparison = try #require(Self.replay(recorded, range: range, user: nil, processor: ShiftedCounter()))
        let changedHistory = comparison.differences.filter {
            if case .changed(let old, _) = $0 { old.topic == RecordedLog.topics.history } else { false }
        }
        // u0 changed at 0 and 2 in the unit 0...3, then at 4 in the unit 4...5: both images differ.
        #expect(Set(changedHistory.map(\.slot.key)) == ["u0@0..2", "u1@0..3", "u0@4..4", "u1@4..5"], "\(comparison.render())")
    }

    /// The fold's content before `start`: the images at the base, then the log re-folded to `start`.
    static func refold(_ recorded: RecordedLog, before start: Int64) -> StartState<CounterProcessor.State>? {
        var base = RefoldBase(start: start)
        for message in recorded.history {
            guard let place = try? ChangelogRecords.historyPlace(of: message) else { return nil }
            base.add(place)
        }
        guard let history = try? recorded.historyChanges(), let changelog = try? recorded.changelogEntries() else { return nil }
        let atBase = StartState.before(base.base, history: history, changelog: changelog, log: recorded.points)
        var fold = PartitionFold(processor: CounterProcessor(), restoring: atBase.states, logTime: atBase.logTime)
        for message in recorded.log where message.offset >= base.base && message.offset < start {
            _ = LogFolding.fold(message, into: &fold)
        }
        return StartState(states: fold.states, logTime: fold.logTime)
    }

    static func replay<P: UserProcessor>(_ recorded: RecordedLog, range: ReplayRange, user: String?, processor: P) -> ReplayComparison?
    where P.State == CounterProcessor.State {
        var base = RefoldBase(start: range.from)
        var covered = Set<UserOffset>()
        for message in recorded.history {
            guard let place = try? ChangelogRecords.historyPlace(of: message) else { return nil }
            base.add(place)
            for offset in place.changed where range.contains(offset) { covered.insert(UserOffset(userId: place.userId, offset: offset)) }
        }
        guard let history = try? recorded.historyChanges(), let changelog = try? recorded.changelogEntries() else { return nil }
        let start = StartState.before(base.base, history: history, changelog: changelog, log: recorded.points)
        guard let replayed = try? PartitionReplay.run(
            processor, from: start, warmUp: recorded.log.filter { $0.offset >= base.base && $0.offset < range.from },
            log: recorded.log.filter { range.contains($0.offset) }, topics: RecordedLog.topics)
        else { return nil }
        let recordedRange = RecordedRange(
            outputs: recorded.outputs, deadLetters: recorded.deadLetters, history: recorded.history, range: range,
            stems: replayed.stems, topics: RecordedLog.topics, user: user)
        let mine = { (record: ComparedRecord) in user == nil || record.userId == user }
        let replayedHistory = replayed.history(for: recordedRange.historyPlaces, covered: covered, range: range, topics: RecordedLog.topics)
        return ReplayComparison(
            recorded: recordedRange.outputs + recordedRange.history,
            replayed: replayed.outputs.filter(mine) + replayedHistory.filter(mine))
    }
}
