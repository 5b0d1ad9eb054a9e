public import FleetModel

/// The core of `fleetctl simulate` as a library: JSONL lines in, JSONL lines (or the summary
/// table) out. The command only adds argument parsing and I/O, so tests drive exactly what
/// operators run.
public struct SimulationRun: Sendable {
    /// What the run prints.
    public enum Format: Sendable {
        /// Every output record as a JSONL line, as it is produced.
        case jsonl
        /// Only the per-user, per-day table, at the end (`--summary`).
        case summary
    }

    public private(set) var simulator: Simulator
    public let format: Format
    private var summary = SimulationSummary()

    public init(simulator: Simulator, format: Format = .jsonl) {
        self.simulator = simulator
        self.format = format
    }

    /// Consumes the next input line; in JSONL format, `write` receives each output line
    /// (without a newline) as soon as it is produced.
    public mutating func consume(line: some StringProtocol, write: (String) -> Void) throws(SimulationError) {
        emit(try simulator.feed(line: line), write: write)
    }

    /// Ends the run: advances to `until` if given (it may not lie before the last line), and in
    /// summary format writes the table.
    public mutating func finish(until: Timestamp?, write: (String) -> Void) throws(SimulationError) {
        if let until {
            if let last = simulator.lastLine, until < last.at {
                throw .untilBeforeLastLine(until: until, lastLine: last.number, lastAt: last.at)
            }
            emit(simulator.advance(to: until), write: write)
        }
        if case .summary = format { write(summary.table) }
    }

    private mutating func emit(_ outputs: [SimulationOutput], write: (String) -> Void) {
        switch format {
        case .jsonl:
            for output in outputs { write(output.jsonLine) }
        case .summary:
            for output in outputs { summary.add(output, zone: simulator.zone(ofUser: output.key)) }
        }
    }

    /// Runs `simulator` over a whole JSONL text and returns what the command would print, one
    /// output line per line (the summary table in summary format).
    public static func run(
        _ jsonl: String, simulator: Simulator, until: Timestamp? = nil, format: Format = .jsonl
    ) throws(SimulationError) -> String {
        var run = SimulationRun(simulator: simulator, format: format)
        var printed = ""
        let write = { (text: String) in
            printed += text
            if !text.hasSuffix("\n") { printed += "\n" }
        }
        for line in jsonl.split(separator: "\n", omittingEmptySubsequences: false) {
            try run.consume(line: line, write: write)
        }
        try run.finish(until: until, write: write)
        return printed
    }
}
