import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(1)))
struct RoundTripTests {
    @Test func keyedRecordsWithHeadersAndTimestampsRoundTrip() async throws {
        try await TestBroker.withTopics("roundtrip", partitions: 3) { topics in
            let topic = topics[0]
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            // Looking the topic up first changes nothing of what is written; an exhausted
            // budget is a timeout, not a hang.
            try await producer.prepare(topics: [topic])
            await #expect(throws: KafkaError.self) { try await producer.prepare(topics: [topic], timeout: .zero) }
            let records = (0..<20).map { i in
                ProducerRecord(topic: topic, key: "user-\(i % 5)", value: Array("value-\(i)".utf8),
                               headers: [KafkaHeader("source", "test"), KafkaHeader("index", "\(i)"), KafkaHeader("null", nil)],
                               timestamp: 1_700_000_000_000 + Int64(i))
            }
            let reports = try await producer.send(records)
            await producer.close()
            #expect(reports.count == records.count)
            #expect(reports.allSatisfy { $0.topic == topic && $0.offset >= 0 && (0..<3).contains($0.partition) })

            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("roundtrip")), logger: .tests)
            try consumer.subscribe(topics: [topic])
            let messages = try await TestBroker.collect(consumer, count: records.count)
            await consumer.close()

            #expect(messages.count == records.count)
            let byValue = Dictionary(uniqueKeysWithValues: messages.map { ($0.value ?? [], $0) })
            for (record, report) in zip(records, reports) {
                let message = try #require(byValue[record.value ?? []])
                #expect(message.key == record.key)
                #expect(message.headers == record.headers)
                #expect(message.timestamp == record.timestamp)
                #expect(message.timestampType == .createTime)
                #expect(message.partition == report.partition)
                #expect(message.offset == report.offset)
            }
        }
    }

    /// `send(contentsOf:)`, how a worker ships a unit's parts: the records are written as their
    /// concatenation would be, in order, and a refused record is named by its index across the
    /// parts, the records around it written all the same.
    @Test func partsAreWrittenInOrderAndAFailureIsCountedAcrossThem() async throws {
        try await TestBroker.withTopics("parts", partitions: 1) { topics in
            let topic = topics[0]
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            try await producer.prepare(topics: [topic])
            func record(_ i: Int, partition: Int32? = nil) -> ProducerRecord {
                ProducerRecord(topic: topic, partition: partition, key: "k", value: Array("part-\(i)".utf8))
            }
            try await producer.send(contentsOf: [[record(0), record(1)], [], [record(2)], [record(3), record(4), record(5)]])
            // Partition 7 does not exist: the fifth record of the concatenation is refused.
            await #expect {
                try await producer.send(contentsOf: [[record(6), record(7)], [record(8), record(9), record(99, partition: 7)], [record(10)]])
            } throws: { error in
                (error as? KafkaError)?.recordIndex == 4
            }
            try await producer.send(contentsOf: [])
            await producer.close()

            let consumer = try KafkaConsumer(
                configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("parts")), logger: .tests)
            try consumer.subscribe(topics: [topic])
            let messages = try await TestBroker.collect(consumer, count: 11)
            await consumer.close()
            #expect(messages.map { String(decoding: $0.value ?? [], as: UTF8.self) } == (0...10).map { "part-\($0)" })
            #expect(messages.map(\.offset) == Array(0...10))
        }
    }
}
