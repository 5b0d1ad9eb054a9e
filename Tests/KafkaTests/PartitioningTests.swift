import FleetTestSupport
import Kafka
import Testing

struct JavaMurmur2VectorTests {
    /// Literal vectors from Kafka's `UtilsTest.testMurmur2` pin the port itself.
    @Test(arguments: [
        ("21", Int32(-973_932_308)),
        ("foobar", -790_332_482),
        ("a-little-bit-long-string", -985_981_536),
        ("a-little-bit-longer-string", -1_486_304_829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
        ("abc", 479_470_107),
    ])
    func portMatchesKafkaUtilsTestVectors(input: String, expected: Int32) {
        #expect(JavaMurmur2.hash(Array(input.utf8)) == expected)
    }

    /// The tools' `KeyPartitioner` (librdkafka's own function) agrees with the Java port on
    /// every key and count, so `explain` and migration look where the producers wrote.
    @Test func keyPartitionerMatchesTheJavaPort() {
        let keys = (0..<500).map { "user-\($0 * 7919)" } + ["", "a", "ab", "abc", "ünïcødé-ключ"]
        for partitions: Int32 in [1, 2, 3, 4, 7, 8, 12, 64] {
            for key in keys {
                let bytes = Array(key.utf8)
                #expect(KeyPartitioner.partition(forKey: bytes, partitions: partitions)
                        == JavaMurmur2.partition(forKey: bytes, partitions: partitions), "\(key) over \(partitions)")
            }
        }
    }
}

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(1)))
struct PartitioningTests {
    /// Every fleet topic is keyed by user id and co-partitioned with Java-compatible murmur2
    /// (DESIGN.md principle 2): our producer's default must place keys where the Java client would.
    @Test func defaultPartitionerPlacesKeysLikeTheJavaClient() async throws {
        let partitions: Int32 = 7
        try await TestBroker.withTopics("murmur2", partitions: partitions) { topics in
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            let keys = (0..<300).map { "user-\($0 * 7919)" } + ["", "a", "ab", "abc", "ünïcødé-ключ", "00000000-0000-0000-0000-000000000000"]
            let records = keys.map { ProducerRecord(topic: topics[0], key: $0, value: Array("v".utf8)) }
            let reports = try await producer.send(records)
            await producer.close()

            var mismatches: [String] = []
            for (key, report) in zip(keys, reports) {
                let expected = JavaMurmur2.partition(forKey: Array(key.utf8), partitions: partitions)
                if report.partition != expected { mismatches.append("\(key): got \(report.partition), Java \(expected)") }
            }
            #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
            // The keys really spread, so the comparison is not vacuous.
            #expect(Set(reports.map(\.partition)).count == Int(partitions))
        }
    }
}
