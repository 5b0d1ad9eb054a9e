import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(1)))
struct PositionTests {
    /// Pause stops delivery of a partition, resume continues where it stopped, seek rewinds.
    @Test func pauseResumeAndSeek() async throws {
        try await TestBroker.withTopics("position", partitions: 2) { topics in
            let topic = topics[0]
            let (p0, p1) = (TopicPartition(topic, 0), TopicPartition(topic, 1))
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            func send(_ partition: TopicPartition, _ range: Range<Int>) async throws {
                _ = try await producer.send(range.map {
                    ProducerRecord(topic: topic, partition: partition.partition, key: "k", value: Array("\(partition.partition)-\($0)".utf8))
                })
            }
            try await send(p0, 0..<5)
            try await send(p1, 0..<5)

            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("position")), logger: .tests)
            try await consumer.assign([p0: KafkaConsumer.beginning, p1: KafkaConsumer.beginning])
            let first = try await TestBroker.collect(consumer, count: 10)
            #expect(first.count == 10)
            #expect(try consumer.position([p0, p1]) == [p0: 5, p1: 5])

            try consumer.pause([p0])
            try await send(p0, 5..<8)
            try await send(p1, 5..<8)
            let whilePaused = try await TestBroker.collect(consumer, count: 3)
            #expect(whilePaused.allSatisfy { $0.topicPartition == p1 }, "\(whilePaused.map(\.topicPartition))")
            // Nothing of p0 turns up while it is paused.
            let extra = try await TestBroker.collect(consumer, count: 1, timeout: .seconds(1))
            #expect(extra.isEmpty, "\(extra.map(\.topicPartition))")

            try consumer.resume([p0])
            let afterResume = try await TestBroker.collect(consumer, count: 3)
            #expect(afterResume.map(\.topicPartition) == [p0, p0, p0])
            #expect(afterResume.map(\.offset) == [5, 6, 7])

            try await consumer.seek([p0: 2])
            let replayed = try await TestBroker.collect(consumer, count: 6)
            #expect(replayed.map(\.offset) == [2, 3, 4, 5, 6, 7])
            #expect(replayed.allSatisfy { $0.topicPartition == p0 })

            // The runtime's start: seek a paused partition to its beginning, resume at once.
            // (`beginning` is resolved to the low watermark; the whole partition comes again.)
            try consumer.pause([p0])
            try await consumer.seek([p0: KafkaConsumer.beginning])
            try consumer.resume([p0])
            let fromStart = try await TestBroker.collect(consumer, count: 8)
            #expect(fromStart.map(\.offset) == Array(0..<8))
            #expect(fromStart.allSatisfy { $0.topicPartition == p0 })

            try await consumer.commit([p0: 8, p1: 8])
            #expect(try await consumer.committed([p0, p1]) == [p0: 8, p1: 8])
            await consumer.close()
            await producer.close()
        }
    }

    @Test func adminDescribesPartitionCountsAndListsGroups() async throws {
        try await TestBroker.withTopics("admin", count: 2, partitions: 3) { topics in
            let admin = try KafkaAdmin(configuration: try TestBroker.configuration(), logger: .tests)
            let missing = TestBroker.unique("missing")
            let counts = try await admin.partitionCounts(topics: topics + [missing])
            #expect(counts == [topics[0]: 3, topics[1]: 3])
            // Creating an existing topic is an error unless asked to ignore it.
            await #expect(throws: KafkaError.self) {
                try await admin.createTopics([NewTopic(name: topics[0], partitions: 3)])
            }
            try await admin.createTopics([NewTopic(name: topics[0], partitions: 3)], ignoreExisting: true)

            let group = TestBroker.unique("listed")
            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: group), logger: .tests)
            try await consumer.assign([TopicPartition(topics[0], 0): KafkaConsumer.beginning])
            try await consumer.commit([TopicPartition(topics[0], 0): 0])
            await consumer.close()
            #expect(try await admin.listGroups().contains(group))
        }
    }
}
