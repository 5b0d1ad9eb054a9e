import FleetLogTesting
import FleetWorkers
import Kafka
import Synchronization
import Testing

/// The in-memory log keeps the Kafka semantics the runtime relies on (`LogConsumer`,
/// `LogProducer`); the runtime tests on it mean something only if these hold.
@Suite("In-memory log")
struct InMemoryLogTests {
    static func record(_ value: String, partition: Int32 = 0) -> ProducerRecord {
        ProducerRecord(topic: "out", partition: partition, key: Array("k".utf8), value: Array(value.utf8), timestamp: 1)
    }

    static func values(_ log: InMemoryLog) -> [String] {
        log.committedRecords("out")[0].map { String(decoding: $0.value ?? [], as: UTF8.self) }
    }

    @Test("read_committed: an open transaction holds back later records, an aborted one stays invisible, a committed one appears with its offsets")
    func transactions() async throws {
        let log = InMemoryLog()
        log.createTopics(["out", "in"], partitions: 1)
        let clients = InMemoryLogClients(log: log, instance: "a", guarantee: .exactlyOnce)
        let producer = try clients.makeProducer()
        let consumer = try clients.makeConsumer()
        try consumer.subscribe(topics: ["in"], pausingOnAssignment: [], onRebalance: nil)
        var batches = consumer.recordBatches.makeAsyncIterator()
        try log.append([ProducerRecord(topic: "in", partition: 0, key: nil, value: [1])])
        _ = try await batches.next()  // takes the assignment, then the record
        let membership = try consumer.membership()
        try await producer.initTransactions(timeout: .seconds(1))

        try producer.beginTransaction()
        _ = try await producer.send([Self.record("aborted")])
        try await producer.abortTransaction(timeout: .seconds(1))

        try producer.beginTransaction()
        _ = try await producer.send([Self.record("committed")])
        try await producer.sendOffsetsToTransaction([TopicPartition("in", 0): 1], membership: membership)
        try log.append([Self.record("plain, after the open transaction")])
        #expect(Self.values(log) == [], "the open transaction holds back every later record")
        #expect(log.committedOffsets.isEmpty)
        try await producer.commitTransaction(timeout: .seconds(1))
        #expect(Self.values(log) == ["committed", "plain, after the open transaction"])
        #expect(log.committedOffsets == [TopicPartition("in", 0): 1])
        // aborted, its marker, committed, its marker, plain
        #expect(log.endOffset(TopicPartition("out", 0)) == 5)
    }

    @Test("a member's revocation is handled before the partitions move; offsets from an old generation are refused")
    func rebalance() async throws {
        let log = InMemoryLog()
        log.createTopics(["in"], partitions: 2)
        let events = Mutex<[String]>([])
        func member(_ name: String) throws -> any LogConsumer {
            let consumer = try InMemoryLogClients(log: log, instance: name, guarantee: .atLeastOnce).makeConsumer()
            try consumer.subscribe(topics: ["in"], pausingOnAssignment: ["in"]) { event in
                events.withLock { $0.append("\(name) \(event.kind) \(event.partitions.map(\.partition))") }
            }
            return consumer
        }
        func settled(_ count: Int) async throws {
            for _ in 0..<2_000 where events.withLock({ $0.count }) < count { try await Task.sleep(for: .milliseconds(1)) }
        }
        let a = try member("a")
        try log.append([ProducerRecord(topic: "in", partition: 0, key: nil, value: [1])])
        let polling = Task {
            var batches = a.recordBatches.makeAsyncIterator()
            return try await batches.next()
        }
        try await settled(1)
        let old = try a.membership()
        #expect(events.withLock { $0 } == ["a assigned [0, 1]"])

        let b = try member("b")
        let bPolling = Task {
            var batches = b.recordBatches.makeAsyncIterator()
            return try await batches.next()
        }
        try await settled(4)
        #expect(events.withLock { $0 } == ["a assigned [0, 1]", "a revoked [0, 1]", "a assigned [0]", "b assigned [1]"])
        // Assigned partitions start paused (the runtime restores them first): nothing was handed out.
        try a.resume([TopicPartition("in", 0)])
        let batch = try await polling.value
        #expect(batch?.map(\.offset) == [0])

        let producer = try InMemoryLogClients(log: log, instance: "a", guarantee: .exactlyOnce).makeProducer()
        try await producer.initTransactions(timeout: .seconds(1))
        try producer.beginTransaction()
        await #expect(throws: KafkaError.self, "a zombie's offsets (an old generation's) are refused") {
            try await producer.sendOffsetsToTransaction([TopicPartition("in", 0): 1], membership: old)
        }
        try await a.commit([TopicPartition("in", 0): 1])  // the current generation's member may
        #expect(log.committedOffsets == [TopicPartition("in", 0): 1])
        bPolling.cancel()
    }

}
