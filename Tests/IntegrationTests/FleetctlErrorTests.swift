import FleetModel
import FleetTestSupport
import FleetWorkers
import Foundation
import Kafka
import Testing

/// What an on-call engineer meets when a command goes wrong (issue 16): one set of exit
/// statuses (README "Exit status"), the subcommand's own usage for a usage error, the address
/// when no broker answers (fast, and within --timeout), the missing topic with its prefix, and
/// no raw librdkafka lines. Run as the `fleetctl` executable.
@Suite("fleetctl errors and exit statuses", .timeLimit(.minutes(3)))
struct FleetctlErrorTests {
    static func fleetctl(_ arguments: [String], _ environment: [String: String] = [:]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await PartitionMigrationTests.fleetctlStreams(arguments, environment: ["FLEET_BOOTSTRAP_SERVERS": "127.0.0.1:1"].merging(environment) { _, given in given })
    }

    @Test("a usage error exits 64 with the subcommand's usage, before any broker is asked")
    func usageErrors() async throws {
        let cases: [([String], String, String)] = [
            (["explain", "--user", "u", "--since", "2026-11-22T00:00:00Z", "--until", "2026-11-21T00:00:00Z"], "is not before --until", "Usage: fleetctl explain"),
            (["replay", "--worker", "delivery-worker", "--partition", "0", "--from", "yesterday"], "--from 'yesterday' is neither", "Usage: fleetctl replay"),
            (["replay", "--worker", "delivery-worker", "--partition", "0", "--from", "500", "--to", "100"], "the range is empty", "Usage: fleetctl replay"),
            (["replay", "--worker", "nobody", "--partition", "0", "--from", "0"], "is not one of", "Usage: fleetctl replay"),
            (["export", "--worker", "delivery-worker", "--user", "u", "--from", "2026-11-22T00:00:00Z", "--to", "2026-11-21T00:00:00Z"], "is not before --to", "Usage: fleetctl export"),
            (["dlq", "show", "--topic", "rin.app.activity", "--id", "garbage"], "--id garbage", "Usage: fleetctl dlq show"),
            (["dlq", "list", "--topic", "rin.app.activity", "--since", "2026-11-22T00:00:00Z", "--until", "2026-11-21T00:00:00Z"], "is after --until", "Usage: fleetctl dlq list"),
            (["dlq", "list", "--topic", "rin.nothing"], "has no dead-letter topic", "Usage: fleetctl dlq list"),
            (["decisions", "--expect", "0"], "--expect", "Usage: fleetctl decisions"),
            (["partitions", "migrate", "--worker", "score-worker", "--to", "8"], "cannot migrate", "Usage: fleetctl partitions migrate"),
        ]
        for (arguments, message, usage) in cases {
            let clock = ContinuousClock()
            let start = clock.now
            let result = try await Self.fleetctl(arguments)
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(usage), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("Usage: fleetctl <subcommand>"), "\(arguments): \(result.stderr)")
            // Far below any broker wait (--timeout defaults to 30 s); a loaded CI machine once took
            // 1.01 s to run the process, so the bound is not the usual time.
            #expect(clock.now - start < .seconds(10), "\(arguments) took \(clock.now - start)")
        }
    }

    @Test("--help and help <command> print the command's help and exit 0; the root help lists the exit statuses")
    func help() async throws {
        for arguments in [["explain", "--help"], ["help", "replay"], ["dlq", "list", "--help"], ["produce", "--help"]] {
            let result = try await Self.fleetctl(arguments)
            let path = arguments.filter { $0 != "--help" && $0 != "help" }.joined(separator: " ")
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout.contains("USAGE: fleetctl \(path)"), "\(arguments): \(result.stdout.prefix(300)) \(result.stderr)")
        }
        let root = try await Self.fleetctl(["--help"])
        #expect(root.status == 0 && root.stdout.contains("75  timed out"), "\(root.stdout)")
        let unknown = try await Self.fleetctl(["explain", "--user", "u", "--frobnicate"])
        #expect(unknown.status == 64 && unknown.stderr.contains("Usage: fleetctl explain"), "\(unknown.stderr)")
    }

    @Test("no broker at the address: exit 69 within seconds, naming the address, no raw librdkafka lines; --timeout honoured")
    func unreachable() async throws {
        let clock = ContinuousClock()
        for arguments in [
            ["explain", "--user", "u"], ["decisions"], ["topics", "check"], ["dlq", "list", "--topic", "rin.app.activity"],
            ["replay", "--worker", "delivery-worker", "--partition", "0", "--from", "0"], ["produce", "-"],
        ] {
            let start = clock.now
            let result = try await Self.fleetctl(arguments + ["--timeout", "20"])
            #expect(result.status == 69, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("cannot reach the Kafka brokers at 127.0.0.1:1"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("Connection refused"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("%3|"), "\(arguments): \(result.stderr)")
            #expect(clock.now - start < .seconds(8), "\(arguments) took \(clock.now - start)")
        }
        // An address that never answers: the whole --timeout, not librdkafka's default.
        let start = clock.now
        let silent = try await Self.fleetctl(["explain", "--user", "u", "--timeout", "3"], ["FLEET_BOOTSTRAP_SERVERS": "10.255.255.1:9092"])
        #expect(silent.status == 69, "\(silent.stderr)")
        #expect(silent.stderr.contains("10.255.255.1:9092"), "\(silent.stderr)")
        #expect(clock.now - start < .seconds(8))
    }

    @Test("missing topics are named with their prefix (exit 69 for a reader, 1 for topics check); --since -5h is an age")
    func missingTopics() async throws {
        guard FleetHarness.brokerAvailable, let bootstrap = TestBrokerEnvironment.bootstrap else { return }
        let environment = ["FLEET_BOOTSTRAP_SERVERS": bootstrap]
        let decisions = try await Self.fleetctl(["decisions", "--topic-prefix", "nosuch.", "--timeout", "30"], environment)
        #expect(decisions.status == 69, "\(decisions.stderr)")
        #expect(decisions.stderr.contains("nosuch.rin.notify.decisions"), "\(decisions.stderr)")
        let check = try await Self.fleetctl(["topics", "check", "--topic-prefix", "nosuch."], environment)
        #expect(check.status == 1)
        #expect(check.stdout.contains("missing topic nosuch.rin.score.batches"), "\(check.stdout)")

        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let fleetEnvironment = fleet.environment(for: .delivery)
        let ok = try await Self.fleetctl(["topics", "check"], fleetEnvironment)
        #expect(ok.status == 0 && ok.stdout.contains("ok:"), "\(ok.stdout) \(ok.stderr)")
        let recent = try await Self.fleetctl(["explain", "--user", "u-nobody", "--since", "-5h"], fleetEnvironment)
        #expect(recent.status == 0 && recent.stdout.contains("no records for user u-nobody"), "\(recent.stdout) \(recent.stderr)")
    }

    @Test("decisions --user counts and prints only the user's decisions, reads to the end by default, and a timeout exits 75")
    func decisionsOfOneUser() async throws {
        guard FleetHarness.brokerAvailable else { return }
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), logger: .tests)
        func decision(_ user: String, _ index: Int) -> ProducerRecord {
            let value = #"{"v":1,"type":"decision","id":"d-\#(user)-\#(index)","user_id":"\#(user)","intent_id":"i-\#(user)-\#(index)","outcome":"delivered","reason":"within_budget","notification_id":"n-\#(user)-\#(index)","rule":"P-BUD-1"}"#
            return ProducerRecord(
                topic: fleet.namespace.physical(Topics.decisions), key: user, value: Array(value.utf8),
                timestamp: Timestamp.at("2026-11-21T09:00:00Z").millisecondsSinceEpoch + Int64(index) * 1000)
        }
        func delivery(_ user: String, _ index: Int) -> ProducerRecord {
            let value = #"{"v":1,"type":"delivery","id":"dl-\#(user)-\#(index)","user_id":"\#(user)","notification":"score.updated","notification_id":"n-\#(user)-\#(index)","merged_intents":["i-\#(user)-\#(index)"],"category":"SCORE","channel":"push","title":"Rin Score","body":"Score \#(index) for \#(user)","deep_link":"rin://score"}"#
            return ProducerRecord(
                topic: fleet.namespace.physical(Topics.deliveries), key: user, value: Array(value.utf8),
                timestamp: Timestamp.at("2026-11-21T09:00:00Z").millisecondsSinceEpoch + Int64(index) * 1000)
        }
        // maya has 3 decisions, others 40 between them, on both partitions.
        var records = (0..<3).flatMap { [decision("maya", $0), delivery("maya", $0)] }
        records += (0..<40).flatMap { [decision("other-\($0 % 7)", $0), delivery("other-\($0 % 7)", $0)] }
        _ = try await producer.send(records)
        await producer.close()

        let environment = fleet.environment(for: .delivery)
        let all = try await Self.fleetctl(["decisions", "--user", "maya"], environment)
        #expect(all.status == 0, "\(all.stderr)")
        let rows = all.stdout.split(separator: "\n").dropFirst()
        #expect(rows.count == 3, "\(all.stdout)")
        #expect(rows.allSatisfy { $0.contains("maya") && $0.contains("score.updated") && $0.contains("Score") }, "\(all.stdout)")
        // Counting the user's decisions only: 3 arrive, so --expect 3 is met and --expect 10 is not.
        let expected = try await Self.fleetctl(["decisions", "--user", "maya", "--expect", "3", "--timeout", "30"], environment)
        #expect(expected.status == 0 && expected.stdout.split(separator: "\n").count == 4, "\(expected.stdout) \(expected.stderr)")
        let clock = ContinuousClock()
        let start = clock.now
        // 20 s, not less: a fresh fleetctl (a debug build) started while the parallel suite keeps
        // both cores busy once read nothing at all within 4 s ("only 0 of 10").
        let short = try await Self.fleetctl(["decisions", "--user", "maya", "--expect", "10", "--timeout", "20"], environment)
        #expect(short.status == 75, "\(short.stderr)")
        #expect(short.stderr.contains("only 3 of 10 expected decisions for user maya arrived within 20 s"), "\(short.stderr)")
        #expect(!short.stderr.contains("Usage:"), "\(short.stderr)")
        #expect(short.stdout.split(separator: "\n").count == 4, "\(short.stdout)")
        #expect(clock.now - start < .seconds(40))
        let everyone = try await Self.fleetctl(["decisions"], environment)
        #expect(everyone.status == 0 && everyone.stdout.split(separator: "\n").count == 44, "\(everyone.stdout)")
    }
}
