import FleetModel
import FleetOperations
import FleetSimulation
import FleetWorkers
import Kafka
import Testing

/// The topics replay and export read after a partition migration (`fleetctl partitions migrate`).
@Suite struct WorkerTopicsTests {
    @Test("generation 2 names the .g2 log, changelog, history and dead letters; generation 1 the plain names")
    func generationNames() {
        let second = WorkerTopics(worker: .delivery, generation: 2)
        #expect(second.folded == "rin.delivery.inbox.g2")
        #expect(second.state == "delivery-worker.state.g2")
        #expect(second.history == "delivery-worker.history.g2")
        #expect(second.deadLetter == Topics.deadLetter(of: "rin.delivery.inbox.g2"))
        let first = WorkerTopics(worker: .delivery)
        #expect(first.folded == Topics.deliveryInbox && first.history == Worker.delivery.historyTopic)
        #expect(first.deadLetter == Topics.deadLetter(of: Topics.deliveryInbox))
    }

    @Test("the default generation is the one folded: 1 never migrated, g when active, g-1 during g's cutover")
    func generationFromRegistry() {
        #expect(WorkerTopics(worker: .delivery, registry: GenerationMap()).generation == 1)
        let active = GenerationMap(entries: [.delivery: GenerationEntry(worker: .delivery, generation: 2, partitions: 4, phase: .active)])
        #expect(WorkerTopics(worker: .delivery, registry: active).folded == "rin.delivery.inbox.g2")
        let cutover = GenerationMap(entries: [.delivery: GenerationEntry(worker: .delivery, generation: 3, partitions: 8, phase: .cutover)])
        #expect(WorkerTopics(worker: .delivery, registry: cutover).generation == 2)
        // Another worker's migration does not move this one.
        #expect(WorkerTopics(worker: .reminder, registry: active).generation == 1)
    }

    @Test("an upstream worker's outputs are every generation of the delivery inbox that exists")
    func upstreamOutputs() {
        let cutover = GenerationMap(entries: [.delivery: GenerationEntry(worker: .delivery, generation: 2, partitions: 4, phase: .cutover)])
        #expect(WorkerTopics(worker: .score, registry: cutover).outputs == [Topics.deliveryInbox, "rin.delivery.inbox.g2"])
        #expect(WorkerTopics(worker: .score, registry: GenerationMap()).outputs == [Topics.deliveryInbox])
        #expect(WorkerTopics(worker: .delivery, registry: cutover).outputs.contains(Topics.decisions))
    }

    @Test("an upstream output carried into the next inbox generation is compared once, under the generation-1 name")
    func recordedUpstreamOutputsAcrossGenerations() throws {
        let intent = Intent(id: "rin.score.batches:0:5:0", userId: "maya", notification: "score.updated", category: "SCORE",
                            data: [:], source: SourceCoordinates(topic: Topics.scoreBatches, partition: 0, offset: 5))
        func written(_ topic: String, offset: Int64) -> KafkaMessage {
            KafkaMessage(topic: topic, partition: 0, offset: offset, key: Array("maya".utf8), value: RecordCodec.encode(.intent(intent)),
                         timestamp: 1_000, timestampType: .createTime)
        }
        let topics = WorkerTopics(worker: .score, generation: 1, deliveryInboxGeneration: 2)
        let recorded = RecordedRange(
            outputs: [written("rin.delivery.inbox.g2", offset: 3), written(Topics.deliveryInbox, offset: 9)], deadLetters: [],
            history: [], range: ReplayRange(partition: 0, from: 0, to: 10), stems: ["rin.score.batches:0:5"], topics: topics, user: nil)
        #expect(recorded.outputs.count == 1)
        #expect(recorded.outputs.first?.topic == Topics.deliveryInbox)
        #expect(recorded.records.count == 1)
    }

    @Test("an export of generation 2 writes the inbox's records on the generation-1 name the simulator knows")
    func exportOfSecondGeneration() throws {
        let topics = WorkerTopics(worker: .delivery, generation: 2)
        let log = [
            KafkaMessage(topic: topics.folded, partition: 1, offset: 0, key: Array("maya".utf8),
                         value: RecordCodec.encode(.userAction(UserAction(id: "a1", userId: "maya", action: "open"))),
                         timestamp: Timestamp.at("2026-11-21T09:00:00Z").millisecondsSinceEpoch, timestampType: .createTime),
            KafkaMessage(topic: topics.folded, partition: 1, offset: 1, key: Array("noor".utf8),
                         value: RecordCodec.encode(.userAction(UserAction(id: "a2", userId: "noor", action: "open"))),
                         timestamp: Timestamp.at("2026-11-21T09:01:00Z").millisecondsSinceEpoch, timestampType: .createTime),
        ]
        let result = SimulationExport.lines(log, topics: topics, user: "maya")
        let parsed = try result.lines.enumerated().map { try #require(try SimulationInput.parse($0.element, line: $0.offset + 1)) }
        #expect(parsed.map(\.topic) == [Topics.deliveryInbox, Topics.deliveryInbox])
        #expect(throws: Never.self) { try InputReplay.simulate(result.lines.joined(separator: "\n"), profile: FleetProfile(.shipped("rin"))) }
    }
}
