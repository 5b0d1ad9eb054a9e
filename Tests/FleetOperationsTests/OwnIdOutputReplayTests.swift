import FleetModel
import FleetOperations
import FleetWorkers
import Kafka
import Testing

/// Outputs whose ids are their own (`OutputRecord.hasOwnId`: the sender's attempts, whose ids
/// derive from the delivery id for the providers' idempotency) carry no `<origin>:<n>` stem, so
/// replay finds their step by the `source-step` header the runtime writes on them. Shown here
/// with `CounterProcessor`'s `reminded` events, emitted with an own id in whichever user's step
/// an alarm comes due (principle 6, P-IDEM-1: ids are a function of the log).
@Suite struct OwnIdOutputReplayTests {
    /// u0 sets an alarm at offset 0; u1 counts every 60 s, so the alarm (due at 90 s) fires in
    /// u1's step at offset 2 and writes `u0~alarm~1` there.
    static let entries = [LogEntry(kind: .action(user: "u0", action: "alarm"), dt: 0, commitAfter: false)]
        + (1...4).map { _ in LogEntry(kind: .action(user: "u1", action: "count"), dt: 60, commitAfter: false) }
    static let ownId = "u0~alarm~1"

    static func reminded(in recorded: RecordedLog) throws -> KafkaMessage {
        try #require(recorded.outputs.first { $0.value.flatMap { try? RecordCodec.decode($0) }?.id == ownId })
    }

    @Test("the runtime names the step of an own-id output in a source-step header, and only there")
    func headerNamesTheStep() throws {
        let recorded = RecordedLog(Self.entries)
        let reminded = try Self.reminded(in: recorded)
        let step = reminded.header(KafkaRecords.Header.sourceStep).map { String(decoding: $0, as: UTF8.self) }
        #expect(step == "\(RecordedLog.topics.folded):\(RecordedLog.partition):2", "the step at offset 2, where the alarm came due")
        #expect(PartitionReplay.stem(ofOutput: reminded, id: Self.ownId) == "\(RecordedLog.topics.folded):\(RecordedLog.partition):2")
        let others = recorded.outputs.filter { $0.offset != reminded.offset }
        #expect(others.count == 6, "five seen events and the alarm")
        #expect(others.allSatisfy { $0.headers.isEmpty }, "outputs with step ids keep their bytes: no header")
        // Without the header, the rule falls back on the id's stem.
        #expect(PartitionReplay.stem(ofId: "rin.delivery.inbox:1:3:0") == "rin.delivery.inbox:1:3")
        #expect(PartitionReplay.stem(ofOutput: others[0], id: "rin.delivery.inbox:1:0:0") == "rin.delivery.inbox:1:0")
    }

    @Test("a range holding the step an own-id output came from compares it; a range after that step leaves it out; both identical")
    func rangeRule() throws {
        let recorded = RecordedLog(Self.entries)
        let holding = try #require(Self.replay(recorded, from: 2))
        #expect(holding.comparison.isIdentical, "\(holding.comparison.render())")
        #expect(holding.recordedKeys.contains(Self.ownId))
        let after = try #require(Self.replay(recorded, from: 3))
        #expect(after.comparison.isIdentical, "\(after.comparison.render())")
        #expect(!after.recordedKeys.contains(Self.ownId), "written by the step at offset 2, before the range")
    }

    @Test("without the source-step header an own-id output reads as extra (what sender replay did before the header)")
    func withoutTheHeaderItIsExtra() throws {
        var recorded = RecordedLog(Self.entries)
        let reminded = try Self.reminded(in: recorded)
        for index in recorded.outputs.indices where recorded.outputs[index].offset == reminded.offset {
            recorded.outputs[index].headers.removeAll { $0.name == KafkaRecords.Header.sourceStep }
        }
        let replay = try #require(Self.replay(recorded, from: 2))
        #expect(replay.comparison.differences.map(\.slot.description) == ["\(Topics.retentionEvents) \(Self.ownId)"])
        #expect(replay.comparison.differences.allSatisfy { if case .extra = $0 { true } else { false } })
    }

    static func replay(_ recorded: RecordedLog, from: Int64) -> (comparison: ReplayComparison, recordedKeys: Set<String>)? {
        let range = ReplayRange(partition: RecordedLog.partition, from: from, to: Int64(recorded.log.count))
        guard let history = try? recorded.historyChanges(), let changelog = try? recorded.changelogEntries() else { return nil }
        let start = StartState.before(range.from, history: history, changelog: changelog, log: recorded.points)
        guard let replayed = try? PartitionReplay.run(
            CounterProcessor(), from: start, log: recorded.log.filter { range.contains($0.offset) }, topics: RecordedLog.topics)
        else { return nil }
        let recordedRange = RecordedRange(
            outputs: recorded.outputs, deadLetters: recorded.deadLetters, history: recorded.history, range: range,
            stems: replayed.stems, topics: RecordedLog.topics, user: nil)
        let comparison = ReplayComparison(
            recorded: recordedRange.outputs + recordedRange.history, replayed: replayed.outputs + replayed.history)
        return (comparison, Set(recordedRange.outputs.map(\.key)))
    }
}
