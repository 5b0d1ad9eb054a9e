import FleetModel
import FleetOperations
import FleetWorkers
import Kafka
import PropertyBased
import Testing

/// Replay against what the runtime's fold recorded, over random logs (users, timers, ticks,
/// records stamped earlier than the log time, undecodable and rejected records) and random
/// ranges: the rebuilt start state is the fold's, and a replay is identical to the recording.
@Suite struct ReplayPropertyTests {
    static let cases = zip(LogEntry.logs, Gen.int(in: 0...30), Gen.int(in: 0...30))

    @Test("the start state rebuilt from history and positions is exactly the fold's before every offset")
    func startStateIsTheFolds() async {
        await propertyCheck(count: 300, input: LogEntry.logs) { entries in
            let recorded = RecordedLog(entries)
            guard let history = try? recorded.historyChanges(), let changelog = try? recorded.changelogEntries() else {
                Issue.record("the recording does not decode")
                return
            }
            for start in 0...recorded.log.count {
                let rebuilt = StartState.before(Int64(start), history: history, changelog: changelog, log: recorded.points)
                #expect(rebuilt.states == recorded.before[start].states, "states before offset \(start)")
                #expect(rebuilt.logTime == recorded.before[start].logTime, "log time before offset \(start)")
            }
        }
    }

    @Test("replaying any range, for the partition or one user, reproduces the recorded outputs, dead letters and history")
    func anyRangeReplaysIdentically() async throws {
        await propertyCheck(count: 300, input: Self.cases) { entries, a, b in
            let recorded = RecordedLog(entries)
            let from = Int64(min(a, b, entries.count)), to = Int64(min(max(a, b), entries.count))
            let range = ReplayRange(partition: RecordedLog.partition, from: from, to: to)
            for user in [nil, "u1"] {
                let comparison = Self.replay(recorded, range: range, user: user, processor: CounterProcessor())
                #expect(comparison?.isIdentical == true, "\(comparison?.render() ?? "replay failed")")
            }
        }
    }

    @Test("a replay from the states of only the users its re-fold can touch (images kept encoded) writes what one from every user's state writes")
    func touchedUsersSuffice() async {
        await propertyCheck(count: 300, input: Self.cases) { entries, a, b in
            let recorded = RecordedLog(entries)
            let from = Int64(min(a, b, entries.count)), to = Int64(min(max(a, b), entries.count))
            let range = ReplayRange(partition: RecordedLog.partition, from: from, to: to)
            guard let history = try? recorded.historyChanges(), let changelog = try? recorded.changelogEntries() else {
                Issue.record("the recording does not decode")
                return
            }
            var builder = StartState<CounterProcessor.State>.Builder(start: from, keepingImagesEncoded: true)
            for change in history { builder.add(change) }
            for entry in changelog { builder.add(entry) }
            for point in recorded.points { builder.add(point) }
            let everyone = StartState.before(from, history: history, changelog: changelog, log: recorded.points)
            #expect(builder.state.states == everyone.states, "the encoded images decode to the states")
            let log = recorded.log.filter { range.contains($0.offset) }
            var reach = RefoldReach()
            for message in log { reach.add(message, limits: .standard) }
            let logTime = builder.logTime
            do {
                let touched = try builder.state(keeping: { user, state in reach.touches(user, state, logTime: logTime, processor: CounterProcessor()) })
                let all = try PartitionReplay.run(CounterProcessor(), from: everyone, log: log, topics: RecordedLog.topics)
                let some = try PartitionReplay.run(CounterProcessor(), from: touched, log: log, topics: RecordedLog.topics)
                #expect(some.outputs == all.outputs && some.history == all.history, "range \(from)..<\(to), \(touched.states.count) of \(everyone.states.count) users")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test("a replay with different logic reports each changed record (replay can fail)")
    func differentLogicIsReported() throws {
        let entries = (0..<6).map { LogEntry(kind: .action(user: "u\($0 % 2)", action: $0 == 2 ? "alarm" : "count"), dt: 60, commitAfter: false) }
        let recorded = RecordedLog(entries)
        let range = ReplayRange(partition: RecordedLog.partition, from: 2, to: 6)
        let comparison = try #require(Self.replay(recorded, range: range, user: nil, processor: ShiftedCounter()))
        #expect(!comparison.isIdentical)
        let changed = comparison.differences.filter { if case .changed = $0 { true } else { false } }
        #expect(!changed.isEmpty)
        #expect(comparison.render().contains("changed  rin.retention.events rin.delivery.inbox:1:2:0"))
    }

    static func replay<P: UserProcessor>(_ recorded: RecordedLog, range: ReplayRange, user: String?, processor: P) -> ReplayComparison?
    where P.State == CounterProcessor.State {
        guard let history = try? recorded.historyChanges(), let changelog = try? recorded.changelogEntries() else { return nil }
        let start = StartState.before(range.from, history: history, changelog: changelog, log: recorded.points)
        guard let replayed = try? PartitionReplay.run(
            processor, from: start, log: recorded.log.filter { range.contains($0.offset) }, topics: RecordedLog.topics)
        else { return nil }
        let recordedRange = RecordedRange(
            outputs: recorded.outputs, deadLetters: recorded.deadLetters, history: recorded.history, range: range,
            stems: replayed.stems, topics: RecordedLog.topics, user: user)
        let mine = { (record: ComparedRecord) in user == nil || record.userId == user }
        return ReplayComparison(
            recorded: recordedRange.outputs + recordedRange.history,
            replayed: replayed.outputs.filter(mine) + replayed.history.filter(mine))
    }
}

/// `CounterProcessor` counting from 10: the same shape, different outputs.
struct ShiftedCounter: UserProcessor {
    let base = CounterProcessor()
    func initialState(userId: String) -> CounterProcessor.State { base.initialState(userId: userId) }
    func process(_ record: FleetRecord, state: inout CounterProcessor.State, context: inout ProcessingContext) throws(RecordError) {
        if state.count < 10 { state.count += 10 }
        try base.process(record, state: &state, context: &context)
    }
    func fireTimers(state: inout CounterProcessor.State, context: inout ProcessingContext) { base.fireTimers(state: &state, context: &context) }
    func nextWakeUp(_ state: CounterProcessor.State) -> Timestamp? { base.nextWakeUp(state) }
}
