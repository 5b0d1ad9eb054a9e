public import FleetModel

/// Why a simulation cannot go on. Each message names the input line (1-based, blank lines
/// counted) or the setting at fault, so the author of a hand-written scenario can fix it.
///
/// Only problems with the file itself stop a run. A record that fails validation or that a
/// processor rejects is not an error here: it goes to its dead-letter topic in the output,
/// as in the fleet (DESIGN.md principle 7).
public enum SimulationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The line is not an input envelope `{"at", "topic", "key", "value"}`.
    case malformedLine(line: Int, reason: String)
    /// The line's `at` is earlier than the previous line's.
    case outOfOrder(line: Int, at: Timestamp, previousLine: Int, previousAt: Timestamp)
    /// No stage of the simulated fleet consumes the line's topic.
    case unknownTopic(line: Int, topic: String, consumed: [String])
    /// `--until` lies before the last line's time.
    case untilBeforeLastLine(until: Timestamp, lastLine: Int, lastAt: Timestamp)
    /// The stages given to the simulator cannot form one fleet.
    case configuration(String)
    /// A snapshot does not fit the simulator it is restored into.
    case snapshot(String)
    /// The policy profile cannot be found or loaded.
    case profile(String)

    public var description: String {
        switch self {
        case .malformedLine(let line, let reason):
            "line \(line): \(reason)"
        case .outOfOrder(let line, let at, let previousLine, let previousAt):
            "line \(line): 'at' \(at) is earlier than \(previousAt) on line \(previousLine); "
                + "input lines must be in non-decreasing 'at' order"
        case .unknownTopic(let line, let topic, let consumed):
            "line \(line): no worker of the simulated fleet consumes topic '\(topic)'; "
                + (consumed.isEmpty
                    ? "this fleet has no worker stages"
                    : "it consumes \(consumed.joined(separator: ", "))")
        case .untilBeforeLastLine(let until, let lastLine, let lastAt):
            "--until \(until) is earlier than \(lastAt) on line \(lastLine)"
        case .configuration(let message), .snapshot(let message), .profile(let message):
            message
        }
    }
}
