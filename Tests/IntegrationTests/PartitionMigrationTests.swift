import FleetModel
import FleetTestSupport
import FleetWorkers
import FleetOperations
import Foundation
import Kafka
import Synchronization
import Testing

/// `fleetctl partitions migrate` (DESIGN.md "Operating it"): the delivery worker moves from 4 to
/// 8 partitions in the middle of steady traffic, with all five worker executables running and
/// the runbook's command line. Compared with a run of the same traffic that never migrated:
/// every intent's decision and every delivery are the same (so budgets and quiet state moved
/// with their users), nothing is lost or repeated, and afterwards the delivery worker folds the
/// new generation and the producers write into it.
///
/// The traffic is the crash-equivalence traffic (`CrashTraffic`: waves with one timestamp, one
/// writer per inbox partition per wave), which makes the fleet's output a function of its input
/// on any partition count that refines the original one (murmur2 mod 8 refines mod 4).
@Suite("Partition migration", .enabled(if: FleetHarness.brokerAvailable), .serialized)
struct PartitionMigrationTests {
    static let before: Int32 = 4
    static let after = 8
    /// The first wave produced once the old log is cut: the intervention starts after wave 3.
    static let firstPostCutWave = 3 + 1

    @Test("4 → 8 partitions mid-traffic: same decisions and deliveries as a run that never migrated (P-BUD-1, P-DND-1, P-IDEM-1)",
          .timeLimit(.minutes(10)))
    func migrateMidTraffic() async throws {
        let traffic = CrashTraffic.make(seed: 0x5EED_3167, partitions: Self.before, usersPerPartition: 8, waveCount: 7)
        print("partition migration: \(traffic.users.count) users, \(traffic.waves.count) waves, \(traffic.recordCount) input records")
        let reference = try await CrashRun.run(traffic, guarantee: .atLeastOnce, killerSeed: nil)
        print(reference.summary)

        let newLog = Worker.delivery.topics(generation: 2).log
        let migrationOutput = MigrationOutput()
        var intervention = CrashRun.Intervention(
            name: "migrated 4 → 8", afterWave: 3, completeBeforeWave: 6,
            overrides: ["FLEET_METADATA_CHECK_INTERVAL_MS": "1000"],
            generationInboxes: [newLog: (Int32(Self.after), .delivery)]
        ) { fleet in
            // The runbook's command (docs/operations.md, "Changing a partition count"), held
            // before activation until records written into the old log after the cut have been
            // carried over: the carry-over is then exercised on every run, not only when the
            // re-key happens to be slower than the upstream workers.
            let command = ["partitions", "migrate", "--worker", "delivery-worker", "--to", String(Self.after), "--wait-timeout", "240"]
            let environment = fleet.environment(for: .delivery)
            let held = try await Self.fleetctl(command + ["--hold-before-activate"], environment: environment)
            guard held.0 == 0, held.1.contains("migration held before activation") else {
                migrationOutput.set(held)
                throw CrashRun.WaveFailure(description: "the held migration did not stop before activation: \(held.1)")
            }
            let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, logger: .tests)
            // Before the activation, everything in the new log was carried over from the old one.
            let deadline = ContinuousClock.now + .seconds(90)
            while try await reader.read([newLog]).isEmpty {
                guard ContinuousClock.now < deadline else {
                    throw CrashRun.WaveFailure(description: "nothing of wave \(Self.firstPostCutWave) was carried into \(newLog)")
                }
                try await Task.sleep(for: .milliseconds(500))
            }
            let result = try await Self.fleetctl(command, environment: environment)
            migrationOutput.set((result.0, held.1 + result.1))
            // Producers re-read the registry every FLEET_METADATA_CHECK_INTERVAL_MS.
            try await Task.sleep(for: .seconds(3))
        } underWay: { fleet in
            // The next wave goes out once the delivery worker has cut the old log: it is written
            // into the old log by every producer and carried over into the new one while the
            // migration re-keys the state.
            let reader = FleetTopicReader(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, logger: .tests)
            let deadline = ContinuousClock.now + .seconds(90)
            while StateRekeying.cuts(in: try await reader.read([Worker.delivery.stateTopic]), generation: 2).count < Int(Self.before) {
                guard ContinuousClock.now < deadline else { throw CrashRun.WaveFailure(description: "the old log was not cut") }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        intervention.atEnd = { fleet in
            // The incident tools on the migrated worker, as the runbook types them: a replay of
            // a new-generation partition reproduces it, and a user's timeline spans both
            // generations.
            let environment = fleet.environment(for: .delivery)
            for partition in 0..<Self.after {
                let replay = try await Self.fleetctl(
                    ["replay", "--worker", "delivery-worker", "--partition", String(partition), "--from", "0"], environment: environment)
                #expect(replay.0 == 0 && replay.1.contains("identical") && replay.1.contains("rin.delivery.inbox.g2[\(partition)]"),
                        "replay of generation 2 partition \(partition): \(replay.1)")
            }
            // The same command again, as after an interruption during the history copy: the
            // generation is active, so it only finishes the copy (nothing is left) and verifies.
            let again = try await Self.fleetctl(
                ["partitions", "migrate", "--worker", "delivery-worker", "--to", String(Self.after), "--wait-timeout", "120"],
                environment: environment)
            #expect(again.0 == 0, "migrate run again: \(again.1)")
            #expect(again.1.contains("copied 0 history records") && !again.1.contains("(0 were already there)"), "migrate run again: \(again.1)")
            #expect(!again.1.contains("re-keyed"), "migrate run again re-keyed: \(again.1)")

            let user = try #require(traffic.users.first).id
            let explained = try await Self.fleetctl(["explain", "--user", user], environment: environment)
            #expect(explained.0 == 0, "\(explained.1)")
            #expect(explained.1.contains("rin.delivery.inbox partition") && explained.1.contains("rin.delivery.inbox.g2 partition"),
                    "explain after the migration: \(explained.1.prefix(600))")
        }
        let migrated = try await CrashRun.run(traffic, guarantee: .atLeastOnce, killerSeed: nil, intervention: intervention)
        print(migrated.summary)
        let (status, output) = migrationOutput.value
        print("fleetctl partitions migrate (exit \(status)):\n\(output)")
        #expect(status == 0)
        #expect(output.contains("held before activation"))
        #expect(output.contains("migration complete"))
        #expect(output.contains("runs on generation 2"))
        // Producers switched: waves 6 and later (after the migration; upstream workers' intents
        // and forwarded activity) went into the new log only, and the delivery worker folded
        // them there (every intent decided, checked below).
        let switched = traffic.waves[6].time
        let latest = migrated.snapshot.inboxLatest
        #expect((latest[Topics.deliveryInbox] ?? switched) < switched, "records reached the old log after the migration: \(latest)")
        #expect(latest[newLog] == traffic.waves.last?.time, "the last wave is not in \(newLog): \(latest)")
        #expect((migrated.snapshot.copies[Topics.deliveryInbox] ?? 0) > 0, "no record was carried over from the old log")
        let lateSources = Set(traffic.waves[6...].flatMap(\.sources))
        #expect(lateSources.count > 2, "waves after the migration come from several producers: \(lateSources)")

        for run in [reference, migrated] {
            #expect(run.snapshot.conflicts.isEmpty, "\(run.name): ids with different bytes, e.g. \(run.snapshot.conflicts.prefix(5))")
            #expect(run.snapshot.deadLetters == 0, "\(run.name): dead letters")
            let undecided = run.snapshot.intentIds.subtracting(run.snapshot.decidedIntentIds)
            #expect(undecided.isEmpty, "\(run.name): intents without a decision, e.g. \(undecided.sorted().prefix(5))")
            let overBudget = try CrashEquivalenceTests.budgetViolations(run.snapshot, traffic: traffic)
            #expect(overBudget.isEmpty, "\(run.name): over the daily budget (P-BUD-1), e.g. \(overBudget.prefix(5))")
        }
        #expect(reference.snapshot.budgetSuppressions > 0, "the traffic must exhaust some daily budgets")

        // Nothing lost or repeated: the same intents, each decided once, the same way.
        let expected = DecisionDigest(reference.snapshot)
        let observed = DecisionDigest(migrated.snapshot)
        #expect(expected.intents == observed.intents, "intents differ: only before \(expected.intents.subtracting(observed.intents).prefix(5)), only after \(observed.intents.subtracting(expected.intents).prefix(5))")
        let changed = expected.decisions.filter { observed.decisions[$0.key] != $0.value }.keys.sorted()
        #expect(changed.isEmpty, "decisions differ, e.g. \(changed.prefix(3).map { "\($0): \(expected.decisions[$0] ?? []) vs \(observed.decisions[$0] ?? [])" })")
        #expect(expected.deliveries == observed.deliveries,
                "deliveries differ: only without migration \(expected.deliveries.subtracting(observed.deliveries).prefix(3)), only with \(observed.deliveries.subtracting(expected.deliveries).prefix(3))")
    }

    /// Runs `fleetctl` with `arguments`; returns its exit status and its standard output
    /// followed by its standard error.
    static func fleetctl(_ arguments: [String], environment: [String: String]) async throws -> (Int32, String) {
        let result = try await fleetctlStreams(arguments, environment: environment)
        return (result.status, result.stdout + result.stderr)
    }

    /// Runs `fleetctl` with `arguments`; returns its exit status (128 + the signal when a signal
    /// ended it) and both streams apart. A run longer than `limit` is killed and thrown.
    static func fleetctlStreams(
        _ arguments: [String], environment: [String: String], limit: Duration = .seconds(600)
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = try ShutdownTests.executable("fleetctl")
        process.arguments = arguments
        process.environment = environment
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleetctl-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out"), err = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = outHandle
        process.standardError = errHandle
        try process.run()
        try? outHandle.close()
        try? errHandle.close()
        let status = try await ChildExit.termination(of: process, within: limit).shellStatus
        return (status, try String(contentsOf: out, encoding: .utf8), try String(contentsOf: err, encoding: .utf8))
    }
}

/// The migration command's result, handed from its task to the test.
private final class MigrationOutput: Sendable {
    private let stored = Mutex<(Int32, String)>((-1, "fleetctl did not run"))
    func set(_ value: (Int32, String)) { stored.withLock { $0 = value } }
    var value: (Int32, String) { stored.withLock { $0 } }
}

/// What users got, independent of the ids timers take: the ids of outputs fired by a timer come
/// from the record whose time fired it, which is another user's on a partition shared
/// differently after the migration. Per intent its decisions (a deferral, then the final one) as
/// outcome, reason, rule and until; deliveries by user, time and content.
private struct DecisionDigest {
    var intents: Set<String> = []
    var decisions: [String: [String]] = [:]
    var deliveries: Set<String> = []

    init(_ snapshot: FleetRecorder.Snapshot) {
        intents = snapshot.intentIds
        let deliveredAt = Dictionary(snapshot.deliveries.map { ($0.id, $0.timestamp) }) { first, _ in first }
        for (key, bytes) in snapshot.records {
            let topic = String(key.prefix { $0 != " " })
            guard let record = try? RecordCodec.decode(bytes, topic: topic) else { continue }
            switch record {
            case .decision(let decision):
                // An engine-made notification's decisions are compared per kind and user: its id
                // comes from the record whose time fired its timer, which is partition-local and
                // so changes with a migration (see the runbook), while its outcomes must not.
                let key = decision.intentId ?? "\(decision.kind?.rawValue ?? "?") \(decision.userId)"
                decisions[key, default: []].append(
                    "\(decision.outcome.rawValue) \(decision.reason ?? "-") \(decision.rule) \(decision.until?.description ?? "-")")
            case .delivery(let delivery):
                deliveries.insert("\(delivery.userId) \(deliveredAt[delivery.id]?.description ?? "?") \(delivery.notification) \(delivery.channel) \(delivery.title) | \(delivery.body) | \(delivery.mergedIntents.sorted())")
            default:
                break
            }
        }
        decisions = decisions.mapValues { $0.sorted() }
    }
}
