import ArgumentParser
import FleetModel
import FleetService
import FleetOperations
import FleetSimulation
import FleetWorkers
import Foundation

/// `fleetctl replay`: re-runs a range of a worker's log with the current code and compares, or
/// asks what another profile would have done. The work is `FleetReplay` / `InputReplay`; this
/// parses options and prints.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-run a range of a worker's log: would the fleet decide the same again, and what if the policy were different?",
        discussion: """
            From the brokers (reads only; joins no consumer group, writes nothing):
              fleetctl replay --worker delivery-worker --partition 3 --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z
              fleetctl replay --worker delivery-worker --user maya --from 1200 --to 1500
              fleetctl replay --worker delivery-worker --user maya --from 2026-11-21T00:00:00Z --profile candidate.yaml --details

            The range is offsets of the worker's folded log (rin.delivery.inbox for the delivery worker, \
            rin.reminder.inbox for the reminder worker, the input topic for the others) on one partition: \
            --partition P, or --user U for the user's partition (murmur2 of the user id). --from is the first \
            offset replayed, --to the first offset not replayed (default: the end of the partition). Each is an \
            offset or an RFC 3339 time; a time means the first record stamped at or after it, found with \
            offsets-for-times (the brokers' answer is checked against the records around it; a broker that \
            does not answer, like the local test broker, is noted once and the partition's timestamps are \
            scanned instead). The log is read from the worker's nearest checkpoint before the range, and the \
            history and changelog are streamed, so memory stays bounded whatever the partition holds.

            After a partition migration (fleetctl partitions migrate) the worker's log, history and \
            state exist per generation (rin.delivery.inbox.g2, delivery-worker.history.g2, ...), each a \
            log with its own partitions and offsets. --generation N picks the generation replayed \
            (default: the one the worker folds now, per fleet.generations; during a cutover the one \
            before; 1 for a worker that never migrated); --partition, --user, --from and --to are then \
            partitions and offsets of that generation's log. An old generation's log goes on past the \
            migration's cut (records carried over into the new log, never folded there): end the range \
            at the cut. An upstream worker's outputs are looked up in every generation of \
            rin.delivery.inbox.

            The history holds one image per changed user per commit unit, so the fold is rebuilt from \
            <worker>.history and <worker>.state at the start of the commit unit --from falls in, re-folded \
            from there to --from, and the range is re-run through the runtime's own fold with the \
            processor the worker runs. A user whose last image before that has expired from the history \
            (retention) cannot be rebuilt: replay says so; replay a later range. Then:
            - without --profile, everything the worker wrote for those records (its output topics, the \
            dead letters of its log, its history records, each rebuilt in the form it was written in) is \
            compared byte for byte: it prints \
            "identical (N records compared)" and exits 0, or lists every record missing, extra or changed \
            with both values and exits 1. --baseline must name the profile the worker runs with (its \
            FLEET_PROFILE). With --user only that user's records are compared (the whole partition range \
            is re-run, since the user's timers fire on other users' records).
            - with --profile, it prints what would have changed against what was recorded: deliveries \
            lost and gained and outcome changes, per rule (P- id), notification type and reason; \
            --details lists each intent with its recorded and replayed decision, --json prints it for tools.
            A range reaching records the worker has not processed yet shows their outputs as "extra": \
            end it earlier.

            Offline, on a fleetctl simulate input (e.g. from fleetctl export):
              fleetctl replay --input slice.jsonl                        # the outputs, as fleetctl simulate prints them
              fleetctl replay --input slice.jsonl --profile candidate.yaml [--details]
            The what-if compares a simulation with --baseline against one with --profile.

            Connection: --bootstrap / $FLEET_BOOTSTRAP_SERVERS, --topic-prefix / $FLEET_TOPIC_PREFIX, and \
            KAFKA_* variables for TLS/SASL, as for the workers.
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Option(help: ArgumentHelp("The worker whose log is replayed.", valueName: "score-worker|sync-worker|reminder-worker|access-worker|delivery-worker"))
    var worker: String?

    @Option(help: "The partition of the worker's folded log to replay.")
    var partition: Int32?

    @Option(help: ArgumentHelp(
        "The generation of the worker's log to replay after a partition migration; offsets and partitions are that generation's log's (default: the generation the worker folds now).",
        valueName: "N"))
    var generation: Int?

    @Option(help: "Replay this user's partition and compare only this user's records.")
    var user: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("First offset to replay, or an RFC 3339 time (the first record at or after it).", valueName: "offset|time"))
    var from: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("First offset not replayed, or an RFC 3339 time (default: the end of the partition).", valueName: "offset|time"))
    var to: String?

    @Option(help: "Give up reading after this many seconds.")
    var timeout: Int = 300

    @Option(help: ArgumentHelp("A fleetctl simulate JSONL file to study offline instead of the brokers.", valueName: "file"))
    var input: String?

    @Option(help: ArgumentHelp("What-if: the profile to replay with (rin, fitcircle, or a profile YAML file).", valueName: "rin|fitcircle|file"))
    var profile: String?

    @Option(help: ArgumentHelp("The profile the worker ran with (default: $FLEET_PROFILE, else rin).", valueName: "rin|fitcircle|file"))
    var baseline: String?

    @Flag(help: "With --profile: list every changed intent with its recorded and replayed decision.")
    var details = false

    @Flag(help: "With --profile: print the summary as one JSON object.")
    var json = false

    func validate() throws {
        if input != nil {
            if worker != nil || partition != nil || user != nil || from != nil || to != nil || generation != nil {
                throw ValidationError("--input studies a file: it takes no --worker, --partition, --user, --from, --to or --generation")
            }
            return
        }
        guard let worker else { throw ValidationError("give --worker (or --input FILE.jsonl)") }
        guard Worker(rawValue: worker) != nil else {
            throw ValidationError("--worker '\(worker)' is not one of \(Worker.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (partition == nil) != (user == nil) else { throw ValidationError("give exactly one of --partition and --user") }
        guard let from else { throw ValidationError("give --from (an offset or an RFC 3339 time)") }
        if let generation, generation < 1 { throw ValidationError("--generation is 1 or more") }
        if timeout <= 0 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
        _ = try RangeOptions.bounds(from: from, to: to)
    }

    func run() async throws {
        let baselineProfile = try loadProfile(baseline ?? ProcessInfo.processInfo.environment["FLEET_PROFILE"] ?? "rin")
        let candidate = try profile.map(loadProfile)
        if let input {
            try runOffline(input, baseline: baselineProfile, candidate: candidate)
            return
        }
        guard let workerName = worker, let worker = Worker(rawValue: workerName), let fromText = from else { return }
        let scope: FleetReplay.Scope = if let user { .user(user) } else { .partition(partition ?? 0) }
        let bounds = try RangeOptions.bounds(from: fromText, to: to)
        let request = FleetReplay.Request(
            worker: worker, scope: scope, from: bounds.from, to: bounds.to,
            baseline: baselineProfile, candidate: candidate, generation: generation,
            limits: try WorkerSettings.limits(environment: ProcessInfo.processInfo.environment))
        let replay = FleetReplay(reader: try await connection.reader(timeout: timeout))
        let report = try await replay.run(request)
        if json, case .whatIf(let summary) = report.verdict {
            print(summary.json())
        } else {
            print(report.render(worker: worker, details: details))
        }
        if !report.isIdentical { throw ExitCode(1) }
    }

    private func runOffline(_ path: String, baseline: FleetProfile, candidate: FleetProfile?) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandFailure(.dataError, "cannot read '\(path)'") }
        let text = String(decoding: data, as: UTF8.self)
        do {
            guard let candidate else {
                for output in try InputReplay.simulate(text, profile: baseline) { print(output.jsonLine) }
                return
            }
            let summary = try InputReplay.whatIf(text, baseline: baseline, candidate: candidate)
            print(json ? summary.json() : summary.render(details: details))
        } catch {
            throw CommandFailure(.dataError, "\(path): \(error.description)")
        }
    }

    private func loadProfile(_ argument: String) throws -> FleetProfile {
        do {
            return try FleetProfile(ProfileChoice.resolve(argument))
        } catch {
            throw ValidationError(error.description)
        }
    }
}

/// `--from`/`--to` of `replay` and `export`, checked while parsing so that a bad value or an
/// inverted range is a usage error (exit 64, the subcommand's usage) before anything is read.
enum RangeOptions {
    static func bounds(from: String, to: String?) throws -> (from: ReplayBound, to: ReplayBound?) {
        func parse(_ text: String, _ name: String) throws -> ReplayBound {
            do { return try ReplayBound(parsing: text) } catch { throw ValidationError("\(name) \(error.description)") }
        }
        let start = try parse(from, "--from")
        let stop = try to.map { try parse($0, "--to") }
        if let inverted = ReplayBound.inverted(from: start, to: stop) { throw ValidationError(inverted) }
        return (start, stop)
    }
}
