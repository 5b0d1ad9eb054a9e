import ArgumentParser
import FleetModel
import FleetOperations
import Foundation

/// `fleetctl export`: a range of a worker's log as `fleetctl simulate` input. The work is
/// `FleetExport` / `SimulationExport`; this parses options and writes.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a range of a worker's log as fleetctl simulate input, to study production traffic offline.",
        discussion: """
              fleetctl export --worker delivery-worker --user maya --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z --output maya.jsonl
              fleetctl simulate maya.jsonl --summary
              fleetctl replay --input maya.jsonl --profile candidate.yaml --details

            The range is chosen as for fleetctl replay (--partition or --user; --from/--to as offsets or \
            RFC 3339 times, --to exclusive, default the end). Each record becomes one line \
            {"at","topic","key","value"}: records the worker's ingest stage forwarded (app activity, \
            reminders) on their external topic, everything else (upstream intents, ticks) on the folded \
            log's topic; "at" is the record's timestamp (never earlier than the line before). With --user \
            only the user's records are written, plus one closing tick so that the user's timers fire as \
            late as they did in production. The simulation starts with every user new: begin the range \
            where the users' history begins, or use fleetctl replay, which starts from the recorded state. \
            Records whose value is not a JSON object are left out and listed on standard error.
            After a partition migration, --generation N picks the generation of the worker's log \
            (rin.delivery.inbox.g2, ...; default: the one the worker folds now, per fleet.generations); \
            --partition, --user, --from and --to are then partitions and offsets of that generation's log.
            Reads only: joins no consumer group and writes nothing to the brokers.
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Option(help: ArgumentHelp("The worker whose log is exported.", valueName: "score-worker|sync-worker|reminder-worker|access-worker|delivery-worker"))
    var worker: String

    @Option(help: "The partition of the worker's folded log.")
    var partition: Int32?

    @Option(help: "Only this user's records (from the user's partition).")
    var user: String?

    @Option(help: ArgumentHelp(
        "The generation of the worker's log after a partition migration; offsets and partitions are that generation's log's (default: the generation the worker folds now).",
        valueName: "N"))
    var generation: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("First offset, or an RFC 3339 time (the first record at or after it).", valueName: "offset|time"))
    var from: String

    @Option(parsing: .unconditional, help: ArgumentHelp("First offset not exported, or an RFC 3339 time (default: the end of the partition).", valueName: "offset|time"))
    var to: String?

    @Option(help: "Give up reading after this many seconds.")
    var timeout: Int = 300

    @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    func validate() throws {
        guard Worker(rawValue: worker) != nil else {
            throw ValidationError("--worker '\(worker)' is not one of \(Worker.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (partition == nil) != (user == nil) else { throw ValidationError("give exactly one of --partition and --user") }
        if let generation, generation < 1 { throw ValidationError("--generation is 1 or more") }
        if timeout <= 0 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
        _ = try RangeOptions.bounds(from: from, to: to)
    }

    func run() async throws {
        guard let worker = Worker(rawValue: worker) else { return }
        let scope: FleetReplay.Scope = if let user { .user(user) } else { .partition(partition ?? 0) }
        let export = FleetExport(reader: try await connection.reader(timeout: timeout))
        let bounds = try RangeOptions.bounds(from: from, to: to)
        let sink: FileHandle
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil), let file = FileHandle(forWritingAtPath: output) else {
                throw CommandFailure(.dataError, "cannot write '\(output)'")
            }
            sink = file
        } else {
            sink = FileHandle.standardOutput
        }
        // Lines go out as they are made, 64 KiB at a time: memory stays that of one batch of
        // records, whatever the range's size.
        var pending: [UInt8] = []
        pending.reserveCapacity(1 << 16)
        func flush() throws {
            guard !pending.isEmpty else { return }
            try sink.write(contentsOf: pending)
            pending.removeAll(keepingCapacity: true)
        }
        let exported = try await export.stream(
            worker: worker, scope: scope, from: bounds.from, to: bounds.to, generation: generation
        ) { line in
            pending.append(contentsOf: line.utf8)
            pending.append(UInt8(ascii: "\n"))
            if pending.count >= 1 << 16 { try flush() }
        }
        try flush()
        if output != nil { try sink.close() }
        var note = "export: \(exported.lineCount) lines from \(exported.topics.folded)[\(exported.range.partition)] offsets \(exported.range.from)..<\(exported.range.to)"
        if exported.skippedCount > 0 {
            note += "; left out \(exported.skippedCount):\n  " + exported.skipped.joined(separator: "\n  ")
            if exported.skippedCount > exported.skipped.count { note += "\n  … and \(exported.skippedCount - exported.skipped.count) more" }
        }
        FileHandle.standardError.write(Data((note + "\n").utf8))
    }
}
