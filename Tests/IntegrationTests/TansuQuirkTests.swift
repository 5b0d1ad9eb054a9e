import FleetModel
import Foundation
import Kafka
import Testing

/// Behaviour of the local test broker (Tansu) that the fleet's tests have to allow for, pinned
/// down so that a broker upgrade which fixes it shows up (the known issue stops occurring and the
/// test fails, prompting the workaround's removal).
@Suite("Test broker quirks", .enabled(if: FleetHarness.brokerAvailable))
struct TansuQuirkTests {
    /// Under exactly-once a worker commits offsets with `send_offsets_to_transaction`. When a
    /// commit unit produced no records — e.g. it held only re-sent copies, which change nothing
    /// (P-IDEM-1) — the transaction carries offsets alone, and Tansu commits the transaction but
    /// not its offsets: the group's committed offset stays behind until a later transaction with
    /// records. Apache Kafka commits them. Harmless (a restart re-reads the copies, again without
    /// effect), but tests must not wait for such offsets (see `WaveProgress`).
    @Test("Tansu drops the offsets of a transaction that produced no records")
    func offsetsOnlyTransaction() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let input = TopicPartition(fleet.namespace.physical(Topics.scoreBatches), 0)
        let group = fleet.namespace.prefix + "quirk"
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": fleet.bootstrap, "group.id": group,
        ]), logger: .tests)
        let producer = try KafkaProducer(configuration: KafkaConfiguration(
            bootstrapServers: fleet.bootstrap, properties: ["transactional.id": group + "-tx"]), logger: .tests)
        try await producer.initTransactions()

        try producer.beginTransaction()
        _ = try await producer.send(ProducerRecord(topic: fleet.namespace.physical(Topics.deliveryInbox), key: "k", value: [1]))
        try await producer.sendOffsetsToTransaction([input: 5], groupMetadata: consumer.groupMetadata())
        try await producer.commitTransaction()
        #expect(try await consumer.committed([input])[input] == 5, "with a record, the offsets are committed")

        try producer.beginTransaction()
        try await producer.sendOffsetsToTransaction([input: 9], groupMetadata: consumer.groupMetadata())
        try await producer.commitTransaction()
        let committed = try await consumer.committed([input])[input]
        withKnownIssue("Tansu: offsets of a transaction without records are not committed") {
            #expect(committed == 9)
        }
        await producer.close()
        await consumer.close()
    }

    /// Five transactional producers, each committing one transaction of eight records over both
    /// partitions of a fresh topic at the same moment (what the four upstream workers and the
    /// delivery worker's forwards do when a fleet starts under exactly-once), round after
    /// round; every acknowledged record must then be in the log, read uncommitted, and shown
    /// to a read_committed reader. On Tansu 0.6.0 a round now and then misses whole batches —
    /// all of one producer's records on a partition, or on both — that the producer had
    /// acknowledged and committed (1–4 rounds in 15; idempotent producers without transactions
    /// lost nothing in 45). A variant seen in the oversized records test on a loaded machine:
    /// a committed transaction's records are in the log (read uncommitted) but never shown to
    /// read_committed readers, as if its partitions never got their commit markers. That test
    /// runs again when it sees either (`OversizedRecordTests.runKeepingEveryRecord`).
    ///
    /// Opt-in (`FLEET_TANSU_PROBES=1`), since on Tansu 0.6.0 it fails at random: it reproduces
    /// the broker's behaviour, it does not check the fleet's.
    @Test(
        "concurrent transactions keep every acknowledged record",
        .enabled(if: ProcessInfo.processInfo.environment["FLEET_TANSU_PROBES"] != nil))
    func concurrentTransactionalBatches() async throws {
        let producers = ["score", "sync", "reminder", "access", "delivery"]
        var lost: [String] = []
        for round in 0..<15 {
            let fleet = try await FleetHarness.make(partitions: 2)
            let output = fleet.namespace.physical(Topics.deliveryInbox)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, name) in producers.enumerated() {
                    group.addTask {
                        let id = fleet.namespace.prefix + name
                        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
                            "bootstrap.servers": fleet.bootstrap, "group.id": id,
                        ]), logger: .tests)
                        let producer = try KafkaProducer(configuration: KafkaConfiguration(
                            bootstrapServers: fleet.bootstrap, properties: ["transactional.id": id + "-0"]), logger: .tests)
                        try await producer.initTransactions()
                        try producer.beginTransaction()
                        _ = try await producer.send((0..<8).map { i in
                            ProducerRecord(topic: output, key: Array("u\(i)".utf8), value: Array("\(name)-\(i)".utf8))
                        })
                        let input = TopicPartition(fleet.namespace.physical(Topics.scoreBatches), Int32(n % 2))
                        try await producer.sendOffsetsToTransaction([input: 3], groupMetadata: consumer.groupMetadata())
                        try await producer.commitTransaction()
                        await producer.close()
                        await consumer.close()
                    }
                }
                try await group.waitForAll()
            }
            let held = try await fleet.read(
                Topics.deliveryInbox, count: 8 * producers.count, timeout: .seconds(20), isolation: .readUncommitted)
            let shown = try await fleet.read(
                Topics.deliveryInbox, count: 8 * producers.count, timeout: .seconds(10), isolation: .readCommitted)
            if held.count < 8 * producers.count || shown.count < 8 * producers.count {
                func perPartition(_ messages: [KafkaMessage]) -> String {
                    (0..<2).map { p in "[\(p)] \(messages.filter { $0.partition == Int32(p) }.count)" }.joined(separator: ", ")
                }
                lost.append("""
                    round \(round): \(held.count) of \(8 * producers.count) records in the log (\(perPartition(held))), \
                    \(shown.count) shown read_committed (\(perPartition(shown)))
                    """)
            }
            await fleet.tearDown()
        }
        #expect(lost.isEmpty, "acknowledged, committed records missing: \(lost)")
    }
}
