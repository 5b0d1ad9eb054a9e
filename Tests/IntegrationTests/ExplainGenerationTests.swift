import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing

/// `fleetctl explain` after a partition migration of the delivery worker, without a broker: a
/// user whose records were folded in generation 1 (`rin.delivery.inbox`, 2 partitions), one
/// record carried over past the cut, and records folded in generation 2 (`rin.delivery.inbox.g2`,
/// 4 partitions), with the new history starting with copies of the old one.
@Suite("Explain across log generations")
struct ExplainGenerationTests {
    static let user = ExplainScenario.quietUser
    static let first = UserLog.LogGeneration(
        generation: 1, topic: Topics.deliveryInbox, partition: KeyPartitioner.partition(forKey: user, partitions: 2), partitionCount: 2)
    static let second = UserLog.LogGeneration(
        generation: 2, topic: Worker.delivery.topics(generation: 2).log,
        partition: KeyPartitioner.partition(forKey: user, partitions: 4), partitionCount: 4)

    /// What the runtime leaves in both generations: q1 arrives at 23:00 in generation 1 and is
    /// deferred to 07:00 by the 23:05 tick (P-DND-1); the user's 23:30 action lands in generation 1
    /// past the cut and is carried into generation 2, where it is folded; the 07:00:05 tick in
    /// generation 2 delivers q1.
    static func migratedLog() -> UserLog {
        var fold = PartitionFold(processor: ExplainScenario.engine)
        var inbox: [KafkaMessage] = []
        var history: [KafkaMessage] = []
        var outputs: [KafkaMessage] = []
        func message(_ log: UserLog.LogGeneration, _ offset: Int64, _ record: FleetRecord, _ time: Timestamp, key: String?,
                     headers: [KafkaHeader] = []) -> KafkaMessage {
            KafkaMessage(topic: log.topic, partition: log.partition, offset: offset, key: key.map { Array($0.utf8) },
                         value: RecordCodec.encode(record), headers: headers, timestamp: time.millisecondsSinceEpoch,
                         timestampType: .createTime)
        }
        func folded(_ read: KafkaMessage, _ record: FleetRecord, _ time: Timestamp, history topic: String) {
            let origin = KafkaRecords.origin(of: read)
            let step = fold.apply(record, timestamp: time, coordinates: origin.coordinates, originIndex: origin.index)
            for output in step.outputs {
                outputs.append(KafkaMessage(
                    topic: output.topic, partition: 0, offset: Int64(outputs.count), key: Array(output.key.utf8),
                    value: RecordCodec.encode(output.record), timestamp: output.timestamp.millisecondsSinceEpoch, timestampType: .createTime))
            }
            for change in step.changes {
                guard let after = try? StateCoding.encode(change.after) else { continue }
                let record = ChangelogRecords.change(
                    userId: change.userId, before: change.before.flatMap { try? StateCoding.encode($0) }, after: after,
                    input: KafkaRecords.coordinates(read), logTime: fold.logTime ?? time, topic: topic, partition: read.partition)
                history.append(KafkaMessage(
                    topic: topic, partition: read.partition, offset: Int64(history.count), key: Array(change.userId.utf8),
                    value: record.value, headers: record.headers, timestamp: time.millisecondsSinceEpoch, timestampType: .createTime))
            }
        }
        let oldHistory = Worker.delivery.historyTopic
        let newHistory = Worker.delivery.topics(generation: 2).history
        let q1 = FleetRecord.intent(Fixtures.scoreIntent(id: "q1", user: user, old: 50, new: 58))
        let night = FleetRecord.tick(Tick(id: "tick-night"))
        let action = FleetRecord.userAction(UserAction(id: "a1", userId: user, action: "open"))
        let morning = FleetRecord.tick(Tick(id: "tick-morning"))

        let arrived = message(first, 0, q1, .at("2026-11-21T23:00:00Z"), key: user)
        let nightTick = message(first, 1, night, .at("2026-11-21T23:05:00Z"), key: nil)
        let pastCut = message(first, 2, action, .at("2026-11-21T23:30:00Z"), key: user)
        inbox += [arrived, nightTick, pastCut]
        folded(arrived, q1, .at("2026-11-21T23:00:00Z"), history: oldHistory)
        folded(nightTick, night, .at("2026-11-21T23:05:00Z"), history: oldHistory)

        // The migration copies the old history into the new one, keyed onto the new partition.
        for change in history {
            var copy = change
            copy.topic = newHistory
            copy.partition = second.partition
            copy.headers.append(KafkaHeader(StateRekeying.copiedFromHeader, "\(change.topic):\(change.partition):\(change.offset)"))
            history.append(copy)
        }
        // The carried copy names its origin, so its ids stay those of generation 1's record.
        let carried = message(second, 0, action, .at("2026-11-21T23:30:00Z"), key: user, headers: [
            KafkaHeader(KafkaRecords.Header.sourceTopic, Topics.deliveryInbox),
            KafkaHeader(KafkaRecords.Header.sourcePartition, String(first.partition)),
            KafkaHeader(KafkaRecords.Header.sourceOffset, "2"),
        ])
        let morningTick = message(second, 1, morning, .at("2026-11-22T07:00:05Z"), key: nil)
        inbox += [carried, morningTick]
        folded(carried, action, .at("2026-11-21T23:30:00Z"), history: newHistory)
        folded(morningTick, morning, .at("2026-11-22T07:00:05Z"), history: newHistory)
        return UserLog(userId: user, generations: [second, first], inbox: inbox, history: history, outputs: outputs)
    }

    @Test("steps of both generations in log order; the carried record once, where it was folded; old history copies count once")
    func stepsAcrossGenerations() throws {
        let timeline = UserTimeline(log: Self.migratedLog(), window: .all, profile: ExplainScenario.engine.profile)
        let positions = timeline.steps.map { "\($0.inbox?.topic ?? "?")@\($0.inbox?.offset ?? -1)" }
        #expect(positions == [
            "rin.delivery.inbox@0", "rin.delivery.inbox@1", "rin.delivery.inbox.g2@0", "rin.delivery.inbox.g2@1",
        ])
        let carried = try #require(timeline.steps.first { $0.inbox?.topic == Self.second.topic && $0.inbox?.offset == 0 })
        guard case .record(.userAction(let action), let origin) = carried.input else {
            Issue.record("the carried step is \(carried.input)")
            return
        }
        #expect(action.id == "a1")
        #expect(origin == SourceCoordinates(topic: Topics.deliveryInbox, partition: Self.first.partition, offset: 2))
        // The deferral's state change (pending notification) shows once, from the old history.
        let deferral = try #require(timeline.steps.dropFirst().first)
        #expect(!deferral.stateChanges.isEmpty)
        #expect(timeline.partition == Self.second.partition && timeline.partitionCount == 4)

        let text = TimelineRendering.text(timeline)
        #expect(text.contains("rin.delivery.inbox partition \(Self.first.partition) of 2, rin.delivery.inbox.g2 partition \(Self.second.partition) of 4"))
        try expectInOrder(text, ["inbox[\(Self.first.partition)]@1", "inbox.g2[\(Self.second.partition)]@0", "inbox.g2[\(Self.second.partition)]@1"])
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(TimelineRendering.json(timeline).utf8))
        #expect(document["logs"]?.arrayValue?.compactMap { $0["topic"]?.stringValue } == [Topics.deliveryInbox, Self.second.topic])
    }

    @Test("an intent that arrived in generation 1 and was delivered in generation 2 has one chain (P-DND-1 deferral, then delivery)")
    func chainAcrossGenerations() throws {
        let timeline = UserTimeline(log: Self.migratedLog(), window: .all, profile: ExplainScenario.engine.profile)
        let chain = try #require(timeline.chains.first { $0.intentId == "q1" })
        #expect(timeline.chains.count == 1)
        #expect(chain.arrival == SourceCoordinates(topic: Topics.deliveryInbox, partition: Self.first.partition, offset: 0))
        #expect(chain.links.map(\.decision.outcome) == [.deferred, .delivered])
        #expect(chain.links.first?.decision.rule == "P-DND-1")  // P-DND-1
        #expect(chain.links.map { $0.step?.topic } == [Topics.deliveryInbox, Self.second.topic])
        #expect(chain.links.last?.input == .tick(id: "tick-morning"))
        #expect(chain.links.last?.delivery != nil)
        #expect(chain.finalOutcome == .delivered)
    }
}
