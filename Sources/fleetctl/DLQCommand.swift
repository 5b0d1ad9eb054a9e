import ArgumentParser
import FleetModel
import FleetService
import FleetOperations
import FleetWorkers
import Foundation
import Kafka

/// `fleetctl dlq`: triage dead letters and re-send them to their source topic after a fix.
struct DLQCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dlq",
        abstract: "List, show and redrive dead-lettered records.",
        discussion: """
            A record a worker cannot decode or validate goes to <topic>.dlq with the error and the \
            record's id: the coordinates topic:partition:offset its outputs' ids derive from (plus \
            :index for a record a fleet worker wrote into an inbox). --topic names the source topic \
            (e.g. rin.app.activity for rin.app.activity.dlq); --id takes the id `list` shows.

            Typical session:
              fleetctl dlq list --topic rin.app.activity --since 6h
              fleetctl dlq show --topic rin.app.activity --id rin.app.activity:3:1812
              # code or config fixed and deployed:
              fleetctl dlq redrive --topic rin.app.activity --id rin.app.activity:3:1812
              # or the data was wrong: save a corrected value and send it instead
              fleetctl dlq redrive --topic rin.app.activity --id rin.app.activity:3:1812 \\
                  --value-file fixed.json
            """,
        subcommands: [List.self, Show.self, Redrive.self])

    /// The source topic and which of its dead letters.
    struct Selection: ParsableArguments {
        @Option(help: ArgumentHelp("Source topic whose dead letters to read (its DLQ is <topic>.dlq).", valueName: "topic"))
        var topic: String

        @Option(name: .customLong("id"), help: ArgumentHelp(
            "A dead letter's id as `list` shows it (topic:partition:offset[:index]); repeat for several.", valueName: "id"))
        var ids: [String] = []

        // `.unconditional`: `--since -5h` is a value, not an unknown option.
        @Option(parsing: .unconditional, help: ArgumentHelp(
            "Only records dead-lettered this recently: RFC 3339 time or an age (90m, 6h, 2d).", valueName: "time"))
        var since: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("Only records dead-lettered no later than this (same forms).", valueName: "time"))
        var until: String?

        @Option(name: .customLong("record-since"), parsing: .unconditional, help: ArgumentHelp(
            "Only dead letters whose failed record's own timestamp is this recent (same forms).", valueName: "time"))
        var recordSince: String?

        @Option(name: .customLong("record-until"), parsing: .unconditional, help: ArgumentHelp(
            "Only dead letters whose failed record's own timestamp is no later than this (same forms).", valueName: "time"))
        var recordUntil: String?

        @Option(help: "Give up reading the DLQ topic after this many seconds.")
        var timeout: Int = 120

        /// Everything checked before the brokers are asked: the topic, each id's format, the
        /// times and their order (a usage error at once, not after reading the DLQ).
        func validate() throws {
            guard DeadLetterTool.sourceTopics.contains(topic) else {
                throw ValidationError(DeadLetterError.notADeadLetterTopic(topic, known: DeadLetterTool.sourceTopics).description)
            }
            if timeout <= 0 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
            let chosen = try selection()
            if let since = chosen.since, let until = chosen.until, since > until {
                throw ValidationError("--since \(since.rfc3339) is after --until \(until.rfc3339): the range is empty (did you swap them?)")
            }
            if let since = chosen.recordSince, let until = chosen.recordUntil, since > until {
                throw ValidationError("--record-since \(since.rfc3339) is after --record-until \(until.rfc3339): the range is empty (did you swap them?)")
            }
        }

        func selection() throws -> DeadLetterSelection {
            let now = Timestamp.wallClock
            var parsed: [DeadLetterID] = []
            for text in ids {
                guard let id = DeadLetterID(text) else {
                    throw ValidationError("--id \(text): expected topic:partition:offset or topic:partition:offset:index")
                }
                parsed.append(id)
            }
            func bound(_ text: String?, _ name: String) throws -> Timestamp? {
                guard let text else { return nil }
                guard let time = TimeBound.parse(text, now: now) else {
                    throw ValidationError("--\(name) \(text): expected an RFC 3339 time or an age such as 90m, 6h, 2d")
                }
                return time
            }
            return DeadLetterSelection(
                ids: parsed, since: try bound(since, "since"), until: try bound(until, "until"),
                recordSince: try bound(recordSince, "record-since"), recordUntil: try bound(recordUntil, "record-until"))
        }

        func tool(_ connection: TopicsCommand.Connection) async throws -> DeadLetterTool {
            DeadLetterTool(reader: try await connection.reader(timeout: timeout))
        }

        /// Says once on stderr when --since/--until had to judge dead letters by their record's
        /// own time (a dead-letter topic still on CreateTime, or a broker ignoring LogAppendTime).
        func noteRecordTimeFallback(_ entries: [DeadLetterLog.Entry], selection chosen: DeadLetterSelection) {
            let judged = entries.filter { chosen.judgedByRecordTime($0.letter) }.count
            guard judged > 0 else { return }
            let note = "note: \(judged) dead letter(s) of \(Topics.deadLetter(of: topic)) carry no dead-letter time "
                + "(the topic is not message.timestamp.type=LogAppendTime, or the broker ignores it): "
                + "--since/--until judged them by their record's own time\n"
            FileHandle.standardError.write(Data(note.utf8))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List dead letters: time, id, user, type, status (pending / redriven to …), error.",
            discussion: """
                Reads <topic>.dlq to its end as of the call (nothing is consumed or committed). \
                `dead-lettered` is when the worker wrote the dead letter (the broker's append time: \
                dead-letter topics are LogAppendTime), `record time` the failed record's own \
                timestamp; --since/--until select by the first, --record-since/--record-until by \
                the second. A dead letter whose copy failed again appears twice with the same id: \
                the older one redriven, the newer one pending.
                """)
        @OptionGroup var connection: TopicsCommand.Connection
        @OptionGroup var selection: Selection
        @Flag(help: "One JSON object per line (keys: id, dead_letter, dead_lettered_at, time, user_id, type, error, status, redriven_to, redriven_from, key, value).")
        var json = false

        func run() async throws {
            let chosen = try selection.selection()
            let log = try await selection.tool(connection).log(of: selection.topic, selection: chosen)
            let entries = log.entries(matching: chosen)
            selection.noteRecordTimeFallback(entries, selection: chosen)
            if json {
                if !entries.isEmpty { print(DeadLetterRendering.jsonLines(entries)) }
            } else if entries.isEmpty {
                print("no dead letters in \(Topics.deadLetter(of: selection.topic)) match")
            } else {
                print(DeadLetterRendering.table(entries))
            }
            if log.unreadable > 0 {
                FileHandle.standardError.write(Data("note: \(log.unreadable) record(s) of the DLQ topic are not dead letters and were skipped\n".utf8))
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print dead letters in full: error, status, key, headers, value (pretty JSON).",
            discussion: "Use it to see exactly what failed before fixing it; --id as `list` shows it.")
        @OptionGroup var connection: TopicsCommand.Connection
        @OptionGroup var selection: Selection

        func validate() throws {
            if selection.ids.isEmpty { throw ValidationError("give --id (see `fleetctl dlq list`)") }
        }

        func run() async throws {
            let chosen = try selection.selection()
            let log = try await selection.tool(connection).log(of: selection.topic, selection: chosen)
            let unknown = log.unknownIDs(in: chosen)
            if !unknown.isEmpty {
                throw DeadLetterError.unknownIDs(unknown, deadLetterTopic: Topics.deadLetter(of: selection.topic))
            }
            print(log.entries(matching: chosen).map(DeadLetterRendering.show).joined(separator: "\n\n"))
        }
    }

    struct Redrive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-send dead letters to their source topic, after the fix, keeping their ids.",
            discussion: """
                Fix first. A code or config fix: deploy it, then redrive the dead letter as it is. A data \
                fix: `show` the record, write the corrected JSON value to a file and pass --value-file \
                (exactly one dead letter; the value is checked as the worker checks it, and an invalid \
                one is refused with the reason before anything is sent). A dead letter that would fail \
                again as it is is refused with its error (sizes are checked against FLEET_MAX_RECORD_BYTES \
                from the environment, as the workers check them).

                A dead letter carried by reference (its value was too large: `show` prints the \
                original's topic, offset, size and SHA-256) is redriven from the source topic: the \
                original is read back and checked against the SHA-256 first. If the topic no longer \
                holds it, or it would be refused again, pass a corrected value with --value-file.

                Each copy goes to --topic with the dead letter's key (for a fix: the fixed user_id), \
                value and original timestamp, and headers naming the failed record's id and \
                redriven-from (the dead letter). The workers process it as if it were the original \
                record at its original coordinates, so every output it causes gets the id it would \
                have had. After sending, a marker is appended to the DLQ topic; `list` then shows the \
                dead letter as "redriven to <where the copy went>".

                Redriving twice: a dead letter already redriven is refused (exit 1). With --force another \
                copy is sent under the same id. The workers ignore a record they have already processed \
                (the delivery worker an intent or activity id it has seen, P-IDEM-1; the score worker a \
                batch already processed; sync a sync_id, access a request_id), so no second decision or \
                delivery follows; should a copy still cause outputs (the workers' memory of ids is \
                bounded), they carry the first copy's ids, and consumers drop ids they have seen. So a \
                forced copy with a different --value-file is not a new record either. Use --force only \
                when the first copy was lost (e.g. its topic was recreated).

                Exit status: 0 when every selected dead letter was sent (or, with --dry-run, would be); 1 \
                when any was refused or sending stopped (what was sent is printed first).
                """)
        @OptionGroup var connection: TopicsCommand.Connection
        @OptionGroup var selection: Selection

        @Flag(help: "Redrive every pending dead letter of the topic (needed when no --id/--since/--until is given).")
        var all = false

        @Option(help: ArgumentHelp(
            "Send this file's JSON value instead of the dead letter's (a data fix; exactly one dead letter).", valueName: "file"))
        var valueFile: String?

        @Flag(help: "Also redrive dead letters already redriven (a second copy with the same id; see above).")
        var force = false

        @Flag(help: "Print what would be sent and send nothing.")
        var dryRun = false

        func run() async throws {
            let tool = try await selection.tool(connection)
            let chosen = try selection.selection()
            let log = try await tool.resolvingReferences(tool.log(of: selection.topic, selection: chosen), selection: chosen)
            let replacement = try valueFile.map { file -> [UInt8] in
                guard let data = FileManager.default.contents(atPath: file) else { throw CommandFailure(.dataError, "cannot read --value-file \(file)") }
                return Array(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).utf8)
            }
            let request = RedriveRequest(
                selection: try selection.selection(), all: all, force: force, replacementValue: replacement,
                limits: try WorkerSettings.limits(environment: ProcessInfo.processInfo.environment))
            let plan = try RedrivePlan(log: log, request: request, namespace: connection.namespace)
            for refusal in plan.refusals { print("refused \(refusal)") }
            if dryRun {
                for copy in plan.copies {
                    print("would redrive \(copy.letter.id) (dead letter \(copy.letter.position)\(copy.isFixed ? ", fixed value" : "")) to \(selection.topic)")
                }
                if !plan.refusals.isEmpty { throw ExitCode(1) }
                return
            }
            let outcome = await tool.redrive(plan, namespace: connection.namespace)
            for sent in outcome.sent {
                print("redriven \(sent.id) (dead letter \(sent.deadLetter)) -> \(sent.copy)")
            }
            if let failure = outcome.failure { print("stopped: \(failure)") }
            if plan.copies.isEmpty, plan.refusals.isEmpty { print("nothing to redrive") }
            if outcome.failure != nil || !plan.refusals.isEmpty { throw ExitCode(1) }
        }
    }
}
