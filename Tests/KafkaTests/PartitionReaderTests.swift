import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(1)))
struct PartitionReaderTests {
    /// What the reader lends: every record of the partition from the start below the end, in
    /// offset order, with its key, value (a tombstone's nil), last header of a name, and a copy
    /// equal to what `KafkaConsumer` reads; partitions read concurrently do not mix.
    @Test func lendsEveryRecordBelowTheEndInOffsetOrder() async throws {
        try await TestBroker.withTopics("partition-reader", partitions: 2) { topics in
            let topic = topics[0]
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            var records = (0..<300).map { index in
                ProducerRecord(
                    topic: topic, partition: Int32(index % 2), key: Array("k\(index)".utf8), value: Array("v\(index)".utf8),
                    headers: [KafkaHeader("kind", "first"), KafkaHeader("kind", "last-\(index)")])
            }
            records.append(ProducerRecord(topic: topic, partition: 0, key: Array("gone".utf8), value: nil))
            records.append(ProducerRecord(topic: topic, partition: 0, key: nil, value: Array("end".utf8)))
            records.append(ProducerRecord(topic: topic, partition: 1, key: nil, value: Array("end".utf8)))
            records.append(ProducerRecord(topic: topic, partition: 1, key: nil, value: Array("after the end".utf8)))
            let reports = try await producer.send(records)
            await producer.close()
            let end0 = reports[301].offset
            let end1 = reports[302].offset

            struct Seen: Sendable {
                var offsets: [Int64] = []
                var keys: [String?] = []
                var values: [String?] = []
                var kinds: [String?] = []
                var missing = 0
                var copies: [KafkaMessage] = []
            }
            let configuration = try TestBroker.consumerConfiguration(group: TestBroker.unique("reader"))
            func read(_ partition: Int32, from start: Int64, until end: Int64) async throws -> Seen {
                try await KafkaPartitionReader.read(
                    TopicPartition(topic, partition), from: start, until: end, configuration: configuration,
                    timeout: .seconds(30), logger: .tests, into: Seen()
                ) { seen, record in
                    #expect(record.partition == partition)
                    seen.offsets.append(record.offset)
                    seen.keys.append(record.key.map { String(decoding: $0, as: UTF8.self) })
                    seen.values.append(record.value.map { String(decoding: $0, as: UTF8.self) })
                    seen.kinds.append(record.header("kind").map { String(decoding: $0, as: UTF8.self) })
                    if record.header("absent") != nil { seen.missing += 1 }
                    if record.offset < 3 { seen.copies.append(record.message(topic: topic)) }
                }
            }
            async let first = read(0, from: KafkaConsumer.beginning, until: end0)
            async let second = read(1, from: 10, until: end1)
            let (zero, one) = try await (first, second)

            #expect(zero.offsets == Array(0..<end0))
            #expect(zero.keys == (0..<150).map { "k\($0 * 2)" } + ["gone"])
            #expect(zero.values == (0..<150).map { "v\($0 * 2)" } + [nil])
            #expect(zero.kinds == (0..<150).map { "last-\($0 * 2)" } + [nil])
            #expect(zero.missing == 0)
            #expect(one.offsets == Array(10..<end1))
            #expect(one.keys == (10..<150).map { "k\($0 * 2 + 1)" })

            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("reader-check")), logger: .tests)
            let expected = try await consumer.readToEnd([TopicPartition(topic, 0): KafkaConsumer.beginning], timeout: .seconds(30))
            await consumer.close()
            #expect(zero.copies == Array(expected.prefix(3)))
        }
    }

    /// The end must exist: a read waiting for a record that never comes stops at its timeout
    /// with an error naming the partition, and an error thrown by the closure ends the read.
    @Test func stopsAtItsTimeoutAndOnTheClosuresError() async throws {
        try await TestBroker.withTopics("partition-reader-stop", partitions: 1) { topics in
            let topic = topics[0]
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            _ = try await producer.send((0..<5).map { ProducerRecord(topic: topic, partition: 0, key: nil, value: [UInt8($0)]) })
            await producer.close()
            let configuration = try TestBroker.consumerConfiguration(group: TestBroker.unique("reader-stop"))
            let partition = TopicPartition(topic, 0)
            do {
                _ = try await KafkaPartitionReader.read(
                    partition, from: KafkaConsumer.beginning, until: 50, configuration: configuration, timeout: .seconds(2),
                    logger: .tests, into: 0
                ) { count, _ in count += 1 }
                Issue.record("a read up to a record that does not exist returned")
            } catch let error as KafkaError {
                #expect(error.name == "_TIMED_OUT" && error.message.contains("\(partition)"))
            }

            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                _ = try await KafkaPartitionReader.read(
                    partition, from: KafkaConsumer.beginning, until: 4, configuration: configuration, timeout: .seconds(20),
                    logger: .tests, into: 0
                ) { count, record in
                    if record.offset == 2 { throw Refused() }
                    count += 1
                }
            }
        }
    }
}
