import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(1)))
struct TransactionTests {
    /// Records and consumed offsets commit together (DESIGN.md principle 4).
    @Test func transactionCommitsRecordsAndOffsetsTogether() async throws {
        try await TestBroker.withTopics("txn", count: 2, partitions: 2) { topics in
            let (input, output) = (topics[0], topics[1])
            let plain = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            _ = try await plain.send((0..<10).map { ProducerRecord(topic: input, key: "u\($0)", value: Array("in-\($0)".utf8)) })
            await plain.close()

            let group = TestBroker.unique("txn")
            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: group), logger: .tests)
            try consumer.subscribe(topics: [input])
            let consumed = try await TestBroker.collect(consumer, count: 10)

            var producerConfiguration = try TestBroker.configuration()
            producerConfiguration.transactionalId = TestBroker.unique("txn-id")
            let producer = try KafkaProducer(configuration: producerConfiguration, logger: .tests)
            try await producer.initTransactions()
            try producer.beginTransaction()
            _ = try await producer.send(consumed.map {
                ProducerRecord(topic: output, key: $0.key, value: $0.value, timestamp: $0.timestamp)
            })
            var next: [TopicPartition: Int64] = [:]
            for message in consumed { next[message.topicPartition] = max(next[message.topicPartition] ?? 0, message.offset + 1) }
            try await producer.sendOffsetsToTransaction(next, groupMetadata: try consumer.groupMetadata())
            try await producer.commitTransaction()
            await producer.close()

            let committed = try await consumer.committed(Array(next.keys))
            #expect(committed == next)
            await consumer.close()

            var readerConfiguration = try TestBroker.consumerConfiguration(group: TestBroker.unique("txn-reader"))
            readerConfiguration.isolationLevel = .readCommitted
            let reader = try KafkaConsumer(configuration: readerConfiguration, logger: .tests)
            try reader.subscribe(topics: [output])
            let outputs = try await TestBroker.collect(reader, count: 10)
            await reader.close()
            #expect(Set(outputs.compactMap(\.value)) == Set(consumed.compactMap(\.value)))
        }
    }

    /// A second producer with the same transactional id fences the first, whose next
    /// transactional step fails with a fatal (fenced) error.
    @Test func newerProducerWithSameTransactionalIdFencesTheOlder() async throws {
        try await TestBroker.withTopics("fence", partitions: 1) { topics in
            var configuration = try TestBroker.configuration()
            configuration.transactionalId = TestBroker.unique("fence-id")
            let first = try KafkaProducer(configuration: configuration, logger: .tests)
            try await first.initTransactions()

            let second = try KafkaProducer(configuration: configuration, logger: .tests)
            try await second.initTransactions()

            // The zombie's next transaction is refused by the broker: fatal, fenced.
            try first.beginTransaction()
            let failure = await #expect(throws: KafkaError.self) {
                _ = try await first.send(ProducerRecord(topic: topics[0], key: "k", value: Array("zombie".utf8)))
                try await first.commitTransaction(timeout: .seconds(10))
            }
            #expect(failure?.isFatal == true, "\(String(describing: failure))")
            #expect(failure?.recovery == .fatal)
            #expect(first.fatalError()?.isFenced == true, "\(String(describing: first.fatalError()))")

            try second.beginTransaction()
            _ = try await second.send(ProducerRecord(topic: topics[0], key: "k", value: Array("second".utf8)))
            try await second.commitTransaction()
            await first.close()
            await second.close()
        }
    }
}
