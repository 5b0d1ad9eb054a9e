import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(1)))
struct ReadToEndTests {
    /// Every record written before the call comes back, none written after, from the given
    /// starts; a batch-produced tail (the local broker reports its high watermark as the start of
    /// the last batch + 1) and an empty partition included.
    @Test func readsEachPartitionToItsEndAtTheCall() async throws {
        try await TestBroker.withTopics("read-to-end", partitions: 3) { topics in
            let topic = topics[0]
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            func send(_ partition: Int32, _ range: Range<Int>) async throws {
                _ = try await producer.send(range.map {
                    ProducerRecord(topic: topic, partition: partition, key: Array("k".utf8), value: Array("\(partition)-\($0)".utf8))
                })
            }
            try await send(0, 0..<40)
            try await send(1, 0..<7)
            try await send(1, 7..<30)   // one batch: the tail the broker's watermark hides

            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("rte")), logger: .tests)
            let (p0, p1, p2) = (TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(topic, 2))
            let read = try await consumer.readToEnd([p0: KafkaConsumer.beginning, p1: 5, p2: KafkaConsumer.beginning])
            await consumer.close()
            #expect(read.filter { $0.partition == 0 }.map(\.offset) == Array(0..<40))
            #expect(read.filter { $0.partition == 1 }.map(\.offset) == Array(5..<30))
            #expect(read.filter { $0.partition == 2 }.isEmpty)

            // A start at the end reads nothing and does not wait for the timeout.
            let again = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("rte")), logger: .tests)
            let none = try await again.readToEnd([p0: 40], timeout: .seconds(10))
            await again.close()
            #expect(none.isEmpty)
        }
    }

    /// librdkafka 2.0 stops fetching a partition while its queue holds `queued.min.messages`
    /// and looks again only when its broker thread wakes, else after up to a second; a reader
    /// that drained the queue waited that out once per fetch (`KafkaConsumer.wakeFetchers`).
    /// Here every fetch fills the queue (one record is the bound, a fetch brings one batch), so
    /// 60 batches would take about a minute without the wake-ups; with them, about a second.
    @Test func aDrainedQueueIsRefilledWithoutWaitingOutTheFetcher() async throws {
        try await TestBroker.withTopics("read-to-end-parked", partitions: 1) { topics in
            let topic = topics[0]
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            for batch in 0..<60 {
                _ = try await producer.send((0..<50).map {
                    ProducerRecord(topic: topic, partition: 0, key: nil, value: Array("\(batch)-\($0)".utf8))
                })
            }
            var configuration = try TestBroker.consumerConfiguration(group: TestBroker.unique("rte-parked"))
            configuration["queued.min.messages"] = "1"
            configuration["max.partition.fetch.bytes"] = "1"
            configuration["fetch.max.bytes"] = "1000"
            configuration["message.max.bytes"] = "1000"
            let consumer = try KafkaConsumer(configuration: configuration, logger: .tests)
            let read = try await consumer.readToEnd([TopicPartition(topic, 0): KafkaConsumer.beginning], timeout: .seconds(20))
            await consumer.close()
            #expect(read.map(\.offset) == Array(0..<3000))
        }
    }
}
