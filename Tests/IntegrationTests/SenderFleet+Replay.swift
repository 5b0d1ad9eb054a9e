import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetSimulation
import FleetWorkers
import Kafka
import Testing

extension SenderFleet {
    /// The profile the sender process runs with (`make`'s profile file).
    static func profile() throws -> FleetProfile {
        try FleetProfile(yaml: try PolicyProfile.shippedYAML("rin") + senderSection)
    }

    /// Waits until the sender's fold has committed every record its log `log` (logical) held
    /// when called, so every output of those records is written; returns, per partition, the
    /// offset after its last record then. (Not the high watermark: the effect stage writes the
    /// log in transactions, whose commit markers take offsets no consumer commits past.) Ticks
    /// keep arriving, so a replay ends its range there.
    func awaitFolded(log: String = Topics.senderInbox, partitions: Int32) async throws -> [Int32: Int64] {
        let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: harness.bootstrap), namespace: harness.namespace, logger: .tests)
        var ends: [Int32: Int64] = [:]
        try await reader.stream(try await reader.beginnings(of: [log])) { ends[$0.partition] = $0.offset + 1 }
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": harness.bootstrap, "group.id": harness.namespace.prefix + Worker.sender.rawValue,
        ]), logger: .tests)
        let places = (0..<partitions).map { TopicPartition(harness.namespace.physical(log), $0) }
        let deadline = ContinuousClock.now + .seconds(30)
        var committed: [TopicPartition: Int64] = [:]
        while ContinuousClock.now < deadline {
            committed = try await consumer.committed(places)
            if places.allSatisfy({ (committed[$0] ?? -1) >= ends[$0.partition] ?? 0 }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        await consumer.close()
        #expect(places.allSatisfy { (committed[$0] ?? -1) >= ends[$0.partition] ?? 0 }, "the sender committed \(committed) of \(ends); log:\n\(logTail)")
        return ends
    }

    /// `fleetctl replay` of each partition of the sender's log `generation` that holds a
    /// provider answer, from its first `send.result` to `ends` (after `awaitFolded`): the range
    /// holds retries decided from answers, and starts after the steps that wrote the first
    /// attempts, which must not be read as missing. Returns the reports.
    func replayFromFirstAnswer(ends: [Int32: Int64], generation: Int = 1) async throws -> [FleetReplay.Report] {
        let log = Worker.sender.topics(generation: generation).log
        let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: harness.bootstrap), namespace: harness.namespace, logger: .tests)
        var firstAnswers: [Int32: Int64] = [:]
        try await reader.stream(try await reader.beginnings(of: [log])) { message in
            if firstAnswers[message.partition] == nil, message.offset < ends[message.partition] ?? 0, Self.type(of: message) == "send.result" {
                firstAnswers[message.partition] = message.offset
            }
        }
        let profile = try Self.profile()
        var reports: [FleetReplay.Report] = []
        for (partition, end) in ends.sorted(by: { $0.key < $1.key }) {
            guard let first = firstAnswers[partition] else { continue }
            reports.append(try await FleetReplay(reader: reader).run(FleetReplay.Request(
                worker: .sender, scope: .partition(partition), from: .offset(first), to: .offset(end), baseline: profile,
                candidate: nil, generation: generation)))
        }
        return reports
    }

    /// The attempts a replay re-ran (its outputs on `rin.sender.attempts`), by attempt id.
    static func replayedAttempts(_ report: FleetReplay.Report) -> [String] {
        report.replayedOutputs.filter { $0.topic == Topics.sendAttempts }.map(\.key)
    }
}
