import Kafka
import Testing

/// Client behaviour the test broker (Tansu) cannot show, against librdkafka's in-process mock
/// cluster. No external broker needed.
@Suite(.timeLimit(.minutes(1)))
struct MockClusterTests {
    @Test func watermarksQueriedAndCached() async throws {
        let cluster = try KafkaMockCluster(logger: .tests)
        try cluster.createTopic("marks", partitions: 1)
        let tp = TopicPartition("marks", 0)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .tests)
        _ = try await producer.send((0..<10).map { ProducerRecord(topic: "marks", partition: 0, key: "k", value: [UInt8($0)]) })
        await producer.close()

        var configuration = KafkaConfiguration(bootstrapServers: cluster.bootstrapServers)
        configuration.groupId = "marks"
        let consumer = try KafkaConsumer(configuration: configuration, logger: .tests)
        #expect(try await consumer.queryWatermarks(tp) == Watermarks(low: 0, high: 10))
        #expect(consumer.cachedWatermarks(tp) == nil)
        try await consumer.assign([tp: KafkaConsumer.beginning])
        let messages = try await TestBroker.collect(consumer, count: 10)
        #expect(messages.map(\.offset) == Array(0..<10))
        #expect(consumer.cachedWatermarks(tp)?.high == 10)
        await consumer.close()
    }

    @Test func offsetsForSymbolicTimestamps() async throws {
        let cluster = try KafkaMockCluster(logger: .tests)
        try cluster.createTopic("times", partitions: 1)
        let tp = TopicPartition("times", 0)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .tests)
        _ = try await producer.send((0..<5).map {
            ProducerRecord(topic: "times", partition: 0, key: "k", value: [UInt8($0)], timestamp: 1_000_000 + Int64($0) * 1000)
        })
        await producer.close()

        var configuration = KafkaConfiguration(bootstrapServers: cluster.bootstrapServers)
        configuration.groupId = "times"
        let consumer = try KafkaConsumer(configuration: configuration, logger: .tests)
        // librdkafka 2.0.2's mock answers only the symbolic timestamps (latest = -1, earliest = -2);
        // a real timestamp lookup is untested here (Tansu answers 0 for everything).
        #expect(try await consumer.offsets(forTimestamps: [tp: -1]) == [tp: 5])
        #expect(try await consumer.offsets(forTimestamps: [tp: -2]) == [tp: 0])
        await consumer.close()
    }
}

extension MockClusterTests {
    /// A transaction can be aborted and the producer goes on with the next one.
    /// (Filtering aborted records for `read_committed` readers is untested here: neither Tansu nor
    /// librdkafka 2.0.2's mock cluster implements it — both hand aborted records to such readers.)
    @Test func abortedTransactionIsFollowedByACommittedOne() async throws {
        let cluster = try KafkaMockCluster(logger: .tests)
        try cluster.createTopic("txn", partitions: 1)
        var producerConfiguration = KafkaConfiguration(bootstrapServers: cluster.bootstrapServers)
        producerConfiguration.transactionalId = "mock-txn"
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: .tests)
        try await producer.initTransactions()
        try producer.beginTransaction()
        _ = try await producer.send(ProducerRecord(topic: "txn", partition: 0, key: "k", value: Array("aborted".utf8)))
        try await producer.abortTransaction()
        try producer.beginTransaction()
        _ = try await producer.send(ProducerRecord(topic: "txn", partition: 0, key: "k", value: Array("committed".utf8)))
        try await producer.commitTransaction()
        await producer.close()

        var configuration = KafkaConfiguration(bootstrapServers: cluster.bootstrapServers)
        configuration.groupId = "reader"
        let consumer = try KafkaConsumer(configuration: configuration, logger: .tests)
        let tp = TopicPartition("txn", 0)
        try await consumer.assign([tp: KafkaConsumer.beginning])
        let messages = try await TestBroker.collect(consumer, count: 2, timeout: .seconds(5))
        #expect(messages.map { String(decoding: $0.value ?? [], as: UTF8.self) } == ["aborted", "committed"])
        await consumer.close()
    }
}
