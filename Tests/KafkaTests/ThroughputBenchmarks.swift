import Foundation
import Kafka
import Testing

/// Throughput of the wrapper against the broker. Opt-in (`FLEET_KAFKA_BENCH=1`), since it loads a
/// shared machine; build with `-c release` for meaningful figures. Prints msgs/s; compare with
/// the C pass-through ceiling in ../shared/bench measured on the same broker.
@Suite(.enabled(if: TestBroker.available && ProcessInfo.processInfo.environment["FLEET_KAFKA_BENCH"] == "1"),
       .timeLimit(.minutes(5)))
struct ThroughputBenchmarks {
    static let count = Int(ProcessInfo.processInfo.environment["FLEET_KAFKA_BENCH_N"] ?? "") ?? 200_000
    static let batch = 10_000

    @Test func produceThenConsumeThenPassThrough() async throws {
        try await TestBroker.withTopics("bench", count: 2, partitions: 12) { topics in
            let value = [UInt8](repeating: UInt8(ascii: "x"), count: 200)
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            let clock = ContinuousClock()

            let produced = try await clock.measure {
                for start in stride(from: 0, to: Self.count, by: Self.batch) {
                    let records = (start..<min(start + Self.batch, Self.count)).map {
                        ProducerRecord(topic: topics[0], key: "user-\($0 % 100_000)", value: value)
                    }
                    _ = try await producer.send(records)
                }
            }
            report("produce", Self.count, produced)

            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("bench")), logger: .tests)
            try consumer.subscribe(topics: [topics[0]])
            var received = 0
            var firstSeen: ContinuousClock.Instant?
            var forwarded: [TopicPartition: Int64] = [:]
            for try await batch in consumer.batches {
                if firstSeen == nil { firstSeen = clock.now }
                // At-least-once pass-through: forward, await delivery, commit.
                let reports = try await producer.send(batch.map {
                    ProducerRecord(topic: topics[1], key: $0.key, value: $0.value, headers: $0.headers, timestamp: $0.timestamp)
                })
                for message in batch { forwarded[message.topicPartition] = message.offset + 1 }
                try await consumer.commit(forwarded)
                #expect(reports.count == batch.count)
                received += batch.count
                if received >= Self.count { break }
            }
            let passThrough = clock.now - (firstSeen ?? clock.now)
            report("pass-through (consume, produce, commit per batch; from first record)", received, passThrough)
            await consumer.close()
            await producer.close()
            #expect(received == Self.count)
        }
    }

    private func report(_ what: String, _ count: Int, _ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        print("bench \(what): \(count) records in \(String(format: "%.2f", seconds)) s = \(Int(Double(count) / seconds)) msgs/s")
    }
}
