import Kafka
import Testing

@Suite(.enabled(if: TestBroker.available), .timeLimit(.minutes(2)))
struct ConsumerGroupTests {
    /// Two members of one group split the partitions; when one leaves, the other takes them all.
    /// The handler runs before every change: while it runs, a revoked partition is still assigned
    /// and an assigned partition not yet.
    @Test func membersGetDisjointPartitionsAndALeaverHandsOverWithHandlerFirst() async throws {
        try await TestBroker.withTopics("group", partitions: 4) { topics in
            let topic = topics[0]
            let all = Set((0..<4).map { TopicPartition(topic, Int32($0)) })
            let group = TestBroker.unique("group")
            let log = RebalanceLog()

            let boxA = ConsumerBox()
            let a = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: group), logger: .tests)
            boxA.consumer = a
            try a.subscribe(topics: [topic], onRebalance: log.handler(named: "A", box: boxA))
            let readerA = BackgroundReader(a)
            try await eventually("A owns all partitions") { Set(try a.assignment()) == all }

            let boxB = ConsumerBox()
            let b = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: group), logger: .tests)
            boxB.consumer = b
            try b.subscribe(topics: [topic], onRebalance: log.handler(named: "B", box: boxB))
            let readerB = BackgroundReader(b)
            try await eventually("A and B share the partitions") {
                let (ownedA, ownedB) = (Set(try a.assignment()), Set(try b.assignment()))
                return !ownedA.isEmpty && !ownedB.isEmpty && ownedA.union(ownedB) == all
            }
            let ownedA = Set(try a.assignment())
            let ownedB = Set(try b.assignment())
            #expect(ownedA.isDisjoint(with: ownedB))

            // B leaves: its partitions go to A.
            await readerB.stop()
            await b.close()
            try await eventually("A owns all partitions again") { Set(try a.assignment()) == all }
            await readerA.stop()
            await a.close()

            let entries = await log.entries
            // Every handler call happened before librdkafka applied its change.
            for entry in entries {
                let partitions = Set(entry.event.partitions)
                switch entry.event.kind {
                case .assigned: #expect(entry.assignmentDuringHandler.isDisjoint(with: partitions), "\(entry)")
                case .revoked, .lost: #expect(partitions.isSubset(of: entry.assignmentDuringHandler), "\(entry)")
                }
            }
            // The order of changes (eager protocol: revoke everything, then assign the new set).
            let summary = entries.map { "\($0.consumer) \($0.event.kind) \($0.event.partitions.count)" }
            let expectedStart = ["A assigned 4", "A revoked 4"]
            #expect(Array(summary.prefix(2)) == expectedStart, "\(summary)")
            #expect(summary.contains("A assigned \(ownedA.count)") && summary.contains("B assigned \(ownedB.count)"), "\(summary)")
            // B's final revocation (on close) comes before A's takeover.
            let bRevoked = try #require(summary.lastIndex(of: "B revoked \(ownedB.count)"), "\(summary)")
            let aTakeover = try #require(summary.lastIndex(of: "A assigned 4"), "\(summary)")
            #expect(bRevoked < aTakeover, "\(summary)")
            #expect(entries.allSatisfy { $0.event.rebalanceProtocol == .eager })
        }
    }
}

extension ConsumerGroupTests {
    /// Newly assigned partitions can start paused (to restore state first), then be resumed.
    @Test func newlyAssignedPartitionsStartPausedWhenAsked() async throws {
        try await TestBroker.withTopics("paused", partitions: 2) { topics in
            let producer = try KafkaProducer(configuration: try TestBroker.configuration(), logger: .tests)
            _ = try await producer.send((0..<6).map { ProducerRecord(topic: topics[0], key: "k\($0)", value: [UInt8($0)]) })
            await producer.close()

            let consumer = try KafkaConsumer(configuration: try TestBroker.consumerConfiguration(group: TestBroker.unique("paused")), logger: .tests)
            let assigned = MessageBuffer()
            try consumer.subscribe(topics: [topics[0]], pauseNewlyAssigned: true) { event in
                if event.kind == .assigned { _ = assigned.append(event.partitions.map { KafkaMessage(topic: $0.topic, partition: $0.partition, offset: -1, key: nil, value: nil, timestamp: nil, timestampType: nil) }) }
            }
            // The consumer polls (and so joins) only while a task waits for messages: wait until
            // the assignment arrived (a starved CI pool once took more than 3 s to get there),
            // then a little longer; nothing may arrive meanwhile.
            var whilePaused: [KafkaMessage] = []
            let deadline = ContinuousClock.now + .seconds(90)
            while assigned.messages.count < 2 && ContinuousClock.now < deadline {
                whilePaused += try await TestBroker.collect(consumer, count: 1, timeout: .seconds(1))
            }
            whilePaused += try await TestBroker.collect(consumer, count: 1, timeout: .seconds(2))
            #expect(whilePaused.isEmpty)
            let partitions = assigned.messages.map(\.topicPartition)
            #expect(partitions.count == 2)
            try consumer.resume(partitions)
            let afterResume = try await TestBroker.collect(consumer, count: 6)
            #expect(afterResume.count == 6)
            await consumer.close()
        }
    }
}
