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
}
