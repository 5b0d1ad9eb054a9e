import ArgumentParser
import FleetModel
import FleetSimulation
import Foundation

/// `fleetctl simulate`: the whole fleet's logic in one process over a JSONL file (DESIGN.md
/// "Operating it"). All the work is `SimulationRun`; this only parses arguments and does I/O.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run the whole fleet's logic over a JSONL file of input records.",
        discussion: """
            Each input line is one record as a worker would read it:
              {"at": "<RFC 3339>", "topic": "<topic>", "key": "<user id>", "value": {...}}
            'at' is when it is processed; lines must be in non-decreasing 'at' order. Blank lines \
            are ignored. Before each line, every timer due on the way fires in time order.

            Every output record is printed as one JSONL line in the order produced:
              {"at": "<produced>", "topic": "<topic>", "key": "<user id>", "value": {...}}
            Records the upstream workers send to the delivery engine appear under \
            rin.delivery.inbox. A record that fails validation, or that a worker rejects, appears \
            on '<topic>.dlq' with the error, and the run goes on.

            Exits non-zero, naming the line, when a line is not such an envelope, is out of \
            order, or names a topic no worker reads.
            """
    )

    @Argument(help: ArgumentHelp("The JSONL input; '-' or nothing reads standard input.", valueName: "file"))
    var file: String?

    @Option(help: ArgumentHelp(
        "After the last line, let time pass until this RFC 3339 time, firing due timers.", valueName: "time"))
    var until: String?

    @Option(help: ArgumentHelp(
        "Policy profile: a shipped one (rin, fitcircle) or a profile YAML file.", valueName: "rin|fitcircle|file"))
    var profile = "rin"

    @Flag(help: "Print a per-user, per-day table of delivered and held-back intents instead of the records.")
    var summary = false

    func run() throws {
        let untilTime = try until.map { text in
            guard let time = Timestamp(rfc3339: text) else {
                throw ValidationError("--until '\(text)' is not an RFC 3339 time such as 2026-03-02T09:00:00Z")
            }
            return time
        }
        do {
            let simulator = try Simulator.fleet(profile: ProfileChoice.resolve(profile))
            var run = SimulationRun(simulator: simulator, format: summary ? .summary : .jsonl)
            let output = StandardOutput()
            let write = { (line: String) in output.write(line) }
            if let path = file, path != "-" {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw SimulateFailure("cannot read '\(path)'")
                }
                let text = String(decoding: data, as: UTF8.self)
                for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                    try run.consume(line: line, write: write)
                }
            } else {
                while let line = readLine(strippingNewline: true) {
                    try run.consume(line: line, write: write)
                }
            }
            try run.finish(until: untilTime, write: write)
            output.flush()
        } catch let error as SimulationError {
            throw SimulateFailure(error.description)
        }
    }
}

/// A failure reported as `fleetctl simulate: <message>` with exit code 1.
struct SimulateFailure: Error, CustomStringConvertible {
    var description: String
    init(_ message: String) { description = "simulate: " + message }
}

/// Buffered standard output: one `print` per record would dominate a long simulation.
private final class StandardOutput {
    private var buffer: [UInt8] = []

    func write(_ line: String) {
        buffer.append(contentsOf: line.utf8)
        if line.utf8.last != UInt8(ascii: "\n") { buffer.append(UInt8(ascii: "\n")) }
        if buffer.count >= 1 << 16 { flush() }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}
