import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetSimulation
import FleetWorkers
import Foundation
import Kafka
import Testing

/// `fleetctl replay` and `fleetctl export` against a run recorded on the local broker: the
/// delivery worker folds a day of intents for several users over two partitions, then the tools
/// re-run ranges of its log (DESIGN.md principle 6). Each test records its own run in its own
/// topic namespace.
@Suite("Replay and export", .enabled(if: FleetHarness.brokerAvailable), .serialized, .timeLimit(.minutes(5)))
struct ReplayTests {
    static let users = ["maya", "noor", "omar", "pia", "quinn", "rafa"]
    static let day = "2026-11-21"

    /// Per user: six ordinary intents an hour apart from 09:00, then a security intent at 15:00
    /// that closes the last coalescing window (ticks are off). The first three (score, dedup, sync
    /// conflict: each its own type cap) spend the rin budget of 3; the rest are held back by type
    /// caps and the budget (P-BUD-1), some digested (P-BUD-5). Users interleave, so every
    /// partition carries several.
    static func traffic() -> [(FleetRecord, Timestamp)] {
        var log: [(FleetRecord, Timestamp)] = []
        for hour in 0..<7 {
            for (index, user) in users.enumerated() {
                let time = Timestamp.at("\(day)T09:00:00Z") + TimeSpan(milliseconds: Int64(hour) * 3_600_000 + Int64(index) * 60_000)
                let id = "\(user)-i\(hour)"
                let intent = switch hour {
                case 6: Fixtures.securityIntent(id: "\(user)-close", user: user)
                case 2, 5: Fixtures.conflictIntent(id: id, user: user, count: Int64(hour))
                case let h where h.isMultiple(of: 2): Fixtures.scoreIntent(id: id, user: user, old: Int64(60 + h), new: Int64(61 + h))
                default: Fixtures.dedupIntent(id: id, user: user, count: Int64(hour))
                }
                log.append((.intent(intent), time))
            }
        }
        return log
    }

    /// A recorded run: the traffic produced to the inbox (murmur2 by user), folded by the delivery
    /// worker with the rin profile, read back once every inbox offset is committed (so outputs
    /// and history are all written).
    struct Recording {
        let fleet: FleetHarness
        let replay: FleetReplay
        let export: FleetExport
        let rin: FleetProfile

        func partition(of user: String) -> Int32 { KeyPartitioner.partition(forKey: user, partitions: Int(fleet.partitions)) }
    }

    static func record(_ overrides: [String: String] = [:]) async throws -> Recording {
        let fleet = try await FleetHarness.make(partitions: 2)
        let worker = try fleet.start(.delivery, try DeliveryEngine(profile: PolicyProfile.shipped("rin")), overrides)
        defer { worker.cancel() }
        let log = traffic()
        try await fleet.produce(log, to: Topics.deliveryInbox)
        try await awaitCommitted(fleet, records: log.count)
        let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, logger: .tests)
        return Recording(
            fleet: fleet, replay: FleetReplay(reader: reader), export: FleetExport(reader: reader),
            rin: try FleetProfile(.shipped("rin")))
    }

    /// Waits until the worker committed offsets summing to `records` over the inbox partitions.
    static func awaitCommitted(_ fleet: FleetHarness, records: Int) async throws {
        let reader = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": fleet.bootstrap, "group.id": fleet.namespace.prefix + Worker.delivery.rawValue,
        ]), logger: .tests)
        let partitions = (0..<fleet.partitions).map { TopicPartition(fleet.namespace.physical(Topics.deliveryInbox), $0) }
        let deadline = ContinuousClock.now + .seconds(90)
        var committed = 0
        while ContinuousClock.now < deadline {
            committed = Int(try await reader.committed(partitions).values.reduce(0, +))
            if committed >= records { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        await reader.close()
        try #require(committed == records, "the worker committed \(committed) of \(records) inbox records")
    }

    /// The rin profile with a daily budget of 2 instead of 3 (P-BUD-1).
    static func budgetOfTwo() throws -> FleetProfile {
        let yaml = try PolicyProfile.shippedYAML("rin")
        let changed = yaml.replacingOccurrences(of: "daily_limit: 3 ", with: "daily_limit: 2 ")
        try #require(changed != yaml, "the shipped rin profile no longer says 'daily_limit: 3'")
        return try FleetProfile(yaml: changed)
    }

    @Test("replaying a whole partition from mid-day reproduces every output and history change byte for byte (principle 6, P-BUD-1)")
    func wholePartitionIsIdentical() async throws {
        let recording = try await Self.record()
        defer { Task { await recording.fleet.tearDown() } }
        let partition = recording.partition(of: "maya")
        // From 11:30: the budget spent in the morning must come from the recorded state.
        let report = try await recording.replay.run(FleetReplay.Request(
            worker: .delivery, scope: .partition(partition), from: .time(.at("\(Self.day)T11:30:00Z")), to: nil,
            baseline: recording.rin, candidate: nil))
        let text = report.render(worker: .delivery, details: false)
        let identical = report.isIdentical
        #expect(identical, "\(text)")
        #expect(text.contains("identical"))
        #expect(report.range.from > 0 && report.recordsReplayed > 0)
        // Nothing was deleted from the history: its log start is 0 (`HistoryRetention`).
        let reader = FleetTopicReader(
            configuration: KafkaConfiguration(bootstrapServers: recording.fleet.bootstrap), namespace: recording.fleet.namespace, logger: .tests)
        #expect(try await reader.logStart(of: TopicPartition(Worker.delivery.historyTopic, partition)) == 0)
        // Something was compared, including budget suppressions decided from restored state.
        guard case .comparison(let comparison) = report.verdict else { Issue.record("expected a comparison"); return }
        let compared = comparison.compared, replayedCount = report.recordsReplayed
        #expect(compared > replayedCount)
        let suppressions = report.replayedOutputs.filter { String(decoding: $0.value, as: UTF8.self).contains(#""rule":"P-BUD-1""#) && String(decoding: $0.value, as: UTF8.self).contains(#""suppressed""#) }
        let suppressed = suppressions.count
        #expect(suppressed > 0)
    }

    @Test("a range recorded with JSON images (the build before binary images) replays as identical on this build, history included")
    func jsonRecordedRangeIsIdentical() async throws {
        let recording = try await Self.record(["FLEET_STATE_IMAGES": "json"])
        defer { Task { await recording.fleet.tearDown() } }
        let report = try await recording.replay.run(FleetReplay.Request(
            worker: .delivery, scope: .partition(recording.partition(of: "maya")), from: .time(.at("\(Self.day)T11:30:00Z")),
            to: nil, baseline: recording.rin, candidate: nil))
        #expect(report.isIdentical, "\(report.render(worker: .delivery, details: false))")
        guard case .comparison(let comparison) = report.verdict else { Issue.record("expected a comparison"); return }
        #expect(comparison.compared > report.recordsReplayed)
    }

    @Test("replaying one user over an offset range is identical and compares only that user's records")
    func oneUserIsIdentical() async throws {
        let recording = try await Self.record()
        defer { Task { await recording.fleet.tearDown() } }
        let report = try await recording.replay.run(FleetReplay.Request(
            worker: .delivery, scope: .user("noor"), from: .offset(5), to: .offset(17), baseline: recording.rin, candidate: nil))
        let identical = report.isIdentical
        #expect(identical, "\(report.render(worker: .delivery, details: false))")
        #expect(report.range.partition == recording.partition(of: "noor") && report.range.from == 5)
        let users = Set(report.replayedOutputs.map(\.userId))
        #expect(users == ["noor"])
    }

    @Test("replay reports differences: with a profile the worker did not run, recorded decisions come out missing, extra or changed")
    func aDifferentBaselineIsReported() async throws {
        let recording = try await Self.record()
        defer { Task { await recording.fleet.tearDown() } }
        let report = try await recording.replay.run(FleetReplay.Request(
            worker: .delivery, scope: .user("maya"), from: .offset(0), to: nil, baseline: try Self.budgetOfTwo(), candidate: nil))
        let text = report.render(worker: .delivery, details: false)
        let identical = report.isIdentical
        #expect(!identical, "\(text)")
        guard case .comparison(let comparison) = report.verdict else { Issue.record("expected a comparison"); return }
        #expect(!comparison.differences.isEmpty)
        // The budget of 2 suppresses maya's third delivery: its decision changes (P-BUD-1).
        #expect(comparison.differences.contains { if case .changed(let old, _) = $0 { old.topic == Topics.decisions } else { false } }, "\(text)")
        #expect(text.contains("recorded: ") && text.contains("replayed: "))
    }

    @Test("a what-if with a daily budget of 2 loses exactly the deliveries a simulation of the exported traffic drops (P-BUD-1)")
    func whatIfMatchesTheSimulator() async throws {
        let recording = try await Self.record()
        defer { Task { await recording.fleet.tearDown() } }
        let budgetOfTwo = try Self.budgetOfTwo()
        for partition in Set(Self.users.map(recording.partition(of:))).sorted() {
            let report = try await recording.replay.run(FleetReplay.Request(
                worker: .delivery, scope: .partition(partition), from: .offset(0), to: nil,
                baseline: recording.rin, candidate: budgetOfTwo))
            guard case .whatIf(let summary) = report.verdict else { Issue.record("expected a what-if"); return }

            // The same partition exported and simulated with both profiles.
            let exported = try await recording.export.run(worker: .delivery, scope: .partition(partition), from: .offset(0), to: nil)
            #expect(exported.result.skipped.isEmpty)
            #expect(exported.result.lines.count == report.recordsReplayed)
            let jsonl = exported.result.lines.joined(separator: "\n")
            func delivered(_ profile: FleetProfile) throws -> Set<String> {
                var intents = Set<String>()
                for output in try InputReplay.simulate(jsonl, profile: profile) {
                    if case .delivery(let delivery)? = output.record { intents.formUnion(delivery.mergedIntents) }
                }
                return intents
            }
            let withRin = try delivered(recording.rin)
            let withTwo = try delivered(budgetOfTwo)
            let dropped = withRin.subtracting(withTwo)
            #expect(!dropped.isEmpty, "a budget of 2 must drop deliveries of partition \(partition)")
            #expect(Set(summary.lost.map(\.key)) == dropped, "\(summary.render(details: true))")
            #expect(Set(summary.gained.map(\.key)) == withTwo.subtracting(withRin))
            #expect(summary.rows.contains { $0.rule.hasPrefix("P-BUD-") && $0.lost > 0 }, "\(summary.render(details: false))")
            // The offline what-if on the exported file says the same.
            let offline = try InputReplay.whatIf(jsonl, baseline: recording.rin, candidate: budgetOfTwo)
            #expect(Set(offline.lost.map(\.key)) == dropped)
            #expect(offline.rows == summary.rows)
        }
    }
}
