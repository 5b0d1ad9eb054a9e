import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(2)))
struct CooperativeRebalanceTests {
    /// The fleet's production protocol: with cooperative-sticky only the moving partitions are
    /// revoked and assigned, each through the handler before librdkafka applies it.
    @Test func cooperativeRebalanceMovesOnlyTheChangedPartitions() async throws {
        try await TestBroker.withTopics("coop", partitions: 4) { topics in
            let topic = topics[0]
            let all = Set((0..<4).map { TopicPartition(topic, Int32($0)) })
            let group = TestBroker.unique("coop")
            let log = RebalanceLog()

            let boxA = ConsumerBox()
            let a = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: group, strategy: .cooperativeSticky), logger: .tests)
            boxA.consumer = a
            try a.subscribe(topics: [topic], onRebalance: log.handler(named: "A", box: boxA))
            let readerA = BackgroundReader(a)
            try await eventually("A owns all partitions", timeout: .seconds(40)) { Set(try a.assignment()) == all }

            let boxB = ConsumerBox()
            let b = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: group, strategy: .cooperativeSticky), logger: .tests)
            boxB.consumer = b
            try b.subscribe(topics: [topic], onRebalance: log.handler(named: "B", box: boxB))
            let readerB = BackgroundReader(b)
            try await eventually("A and B share the partitions", timeout: .seconds(40)) {
                let (ownedA, ownedB) = (Set(try a.assignment()), Set(try b.assignment()))
                return !ownedA.isEmpty && !ownedB.isEmpty && ownedA.union(ownedB) == all && ownedA.isDisjoint(with: ownedB)
            }
            let ownedB = Set(try b.assignment())

            await readerB.stop()
            await b.close()
            try await eventually("A owns all partitions again", timeout: .seconds(40)) { Set(try a.assignment()) == all }
            await readerA.stop()
            await a.close()

            let entries = await log.entries.filter { !$0.event.partitions.isEmpty }
            #expect(entries.allSatisfy { $0.event.rebalanceProtocol == .cooperative })
            for entry in entries {
                let partitions = Set(entry.event.partitions)
                switch entry.event.kind {
                case .assigned: #expect(entry.assignmentDuringHandler.isDisjoint(with: partitions), "\(entry)")
                case .revoked, .lost: #expect(partitions.isSubset(of: entry.assignmentDuringHandler), "\(entry)")
                }
            }
            let aEvents = entries.filter { $0.consumer == "A" }.map { "\($0.event.kind) \(Set($0.event.partitions).sorted())" }
            // A gives B exactly B's partitions (never its whole assignment), gets them back, and
            // revokes everything only when it closes.
            #expect(aEvents == [
                "assigned \(all.sorted())",
                "revoked \(ownedB.sorted())",
                "assigned \(ownedB.sorted())",
                "revoked \(all.sorted())",
            ], "\(entries)")
            let bEvents = entries.filter { $0.consumer == "B" }.map { "\($0.event.kind) \(Set($0.event.partitions).sorted())" }
            #expect(bEvents == ["assigned \(ownedB.sorted())", "revoked \(ownedB.sorted())"], "\(entries)")
        }
    }
}
