import FleetModel
@testable import FleetWorkers
import Foundation
import Kafka
import Testing

/// What a worker reads and writes in each phase of a partition migration (`TopicLayout`,
/// `GenerationMap`), and the registry's records.
struct GenerationLayoutTests {
    let namespace = TopicNamespace(prefix: "p.")

    func map(_ phase: GenerationEntry.Phase) -> GenerationMap {
        GenerationMap(entries: [.delivery: GenerationEntry(worker: .delivery, generation: 2, partitions: 8, phase: phase)])
    }

    @Test("generation 1: the log, its ingest topic, changelog and history, co-partitioned; nothing carried")
    func firstGeneration() {
        let layout = TopicLayout(worker: .delivery, namespace: namespace)
        #expect(layout.folds)
        #expect(layout.subscribed == ["p.rin.delivery.inbox", "p.rin.app.activity"])
        #expect(layout.coPartitioned == ["rin.app.activity", "rin.delivery.inbox", "delivery-worker.state", "delivery-worker.history"])
        #expect(layout.carriedTopic == nil)
    }

    @Test("the sender ingests several topics: all co-partitioned with its log and subscribed in the worker's order; settings only from the activity topic")
    func severalIngestTopics() throws {
        let layout = TopicLayout(worker: .sender, namespace: namespace)
        #expect(layout.subscribed == ["p.rin.sender.inbox", "p.rin.notify.deliveries", "p.rin.devices", "p.rin.app.activity"])
        #expect(layout.coPartitioned == [
            "rin.notify.deliveries", "rin.devices", "rin.app.activity", "rin.sender.inbox", "sender-worker.state", "sender-worker.history",
        ])
        #expect(layout.pausedOnAssignment == ["p.rin.sender.inbox"])
        let activity = try #require(layout.ingestSources["p.rin.app.activity"])
        #expect(activity.forwards("user.settings_changed"))
        #expect(!activity.forwards("app.opened"))
        let devices = try #require(layout.ingestSources["p.rin.devices"])
        #expect(devices.forwards("device.registered") && devices.only == nil, "a topic the sender owns: every record, bad ones dead-lettered")
        // One partition count for all of them: a topic off by one is named.
        var counts = Dictionary(uniqueKeysWithValues: layout.required.map { (namespace.physical($0), 4) })
        #expect(try layout.partitionCount(in: counts) == 4)
        counts["p.rin.devices"] = 3
        #expect(throws: TopicLayout.Mismatch.self) { try layout.partitionCount(in: counts) }
    }

    @Test("the delivery and reminder workers ingest what they did before: one topic, every record")
    func singleIngestTopicUnchanged() {
        #expect(Worker.delivery.ingestSources == [IngestSource(topic: Topics.appActivity)])
        #expect(Worker.reminder.ingestSources == [IngestSource(topic: Topics.reminders)])
        #expect(Worker.score.ingestSources.isEmpty && Worker.sync.ingestSources.isEmpty && Worker.access.ingestSources.isEmpty)
    }

    @Test("cutover: nothing folded; the ingest topic and the old log are read, the old log's partitions wait for their cut")
    func cutover() {
        let layout = TopicLayout(worker: .delivery, namespace: namespace, generations: map(.cutover))
        #expect(!layout.folds)
        #expect(layout.subscribed == ["p.rin.app.activity", "p.rin.delivery.inbox"])
        #expect(layout.pausedOnAssignment == ["p.rin.delivery.inbox"])
        #expect(layout.carriedStateTopic == "p.delivery-worker.state")
        #expect(layout.coPartitioned == ["rin.delivery.inbox.g2", "delivery-worker.state.g2", "delivery-worker.history.g2"])
        // Producers still write into the old log, so each user's records keep their order.
        #expect(map(.cutover).route(Topics.deliveryInbox) == Topics.deliveryInbox)
    }

    @Test("active: the new generation is folded, the old log carried over, producers write into the new log")
    func active() throws {
        let layout = TopicLayout(worker: .delivery, namespace: namespace, generations: map(.active))
        #expect(layout.folds)
        #expect(layout.subscribed == ["p.rin.delivery.inbox.g2", "p.rin.app.activity", "p.rin.delivery.inbox"])
        #expect(layout.foldedTopic == "p.rin.delivery.inbox.g2")
        #expect(layout.stateTopic == "p.delivery-worker.state.g2")
        #expect(map(.active).route(Topics.deliveryInbox) == "rin.delivery.inbox.g2")
        #expect(map(.active).route(Topics.reminderInbox) == Topics.reminderInbox)
        #expect(map(.active).route(Topics.decisions) == Topics.decisions)
        // The ingest topic keeps its own count; the generation's three topics must agree.
        let counts = ["p.rin.delivery.inbox.g2": 8, "p.delivery-worker.state.g2": 8, "p.delivery-worker.history.g2": 8,
                      "p.rin.app.activity": 4, "p.rin.delivery.inbox": 4]
        #expect(try layout.partitionCount(in: counts) == 8)
        var wrong = counts
        wrong["p.delivery-worker.history.g2"] = 4
        #expect(throws: TopicLayout.Mismatch.self) { try layout.partitionCount(in: wrong) }
        var missing = counts
        missing["p.rin.delivery.inbox"] = nil
        #expect(throws: TopicLayout.Mismatch.self) { try layout.partitionCount(in: missing) }
    }

    @Test("the registry's last record per worker counts; an unreadable one is an error naming its offset")
    func registry() throws {
        func message(_ entry: GenerationEntry, offset: Int64) throws -> KafkaMessage {
            let record = try GenerationRegistry.record(entry, namespace: namespace)
            return KafkaMessage(topic: record.topic, partition: 0, offset: offset, key: record.key, value: record.value,
                                timestamp: nil, timestampType: nil)
        }
        let cutover = GenerationEntry(worker: .delivery, generation: 2, partitions: 8, phase: .cutover)
        var active = cutover
        active.phase = .active
        let map = try GenerationRegistry.map(of: [try message(active, offset: 1), try message(cutover, offset: 0)])
        #expect(map.entry(for: .delivery) == active)
        #expect(map.entry(for: .reminder).generation == 1)
        let garbage = KafkaMessage(topic: "p.fleet.generations", partition: 0, offset: 2, key: nil, value: Array("{".utf8),
                                   timestamp: nil, timestampType: nil)
        #expect(throws: GenerationRegistry.RegistryError.self) { _ = try GenerationRegistry.map(of: [garbage]) }
    }
}
