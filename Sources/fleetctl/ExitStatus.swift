import ArgumentParser
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka

/// fleetctl's exit statuses, one set for every subcommand (README "Exit status" and
/// docs/operations.md list them). The numbers above 1 are the BSD `sysexits.h` ones, so scripts
/// and on-call engineers can tell "the answer is no" from "you typed it wrong" from "the
/// brokers are not there" without reading the text.
enum ExitStatus: Int32, CaseIterable, Sendable {
    /// The command did what was asked (also "no records", "identical").
    case success = 0
    /// The command ran and the answer is "no": a replay found differences, `topics check` found
    /// problems, a redrive was refused or stopped, a migration cannot go on, an id is unknown.
    case finding = 1
    /// The command line is wrong (unknown option, bad value, inverted range): the subcommand's
    /// own usage is printed.
    case usage = 64
    /// An input is wrong: a JSONL file, a profile, a `--value-file`, a record that cannot be read.
    case dataError = 65
    /// No broker answers at the address given, or a topic the command needs is missing (named
    /// with its prefix).
    case unavailable = 69
    /// Any other failure (a Kafka error the command cannot explain better).
    case software = 70
    /// The brokers answered, but the read or wait did not finish within `--timeout`.
    case timedOut = 75

    /// One line per status, for `fleetctl --help` and the docs.
    static let table = """
        EXIT STATUS (every subcommand):
          0   done (also "no records", "identical")
          1   the answer is no: replay differences, topics check problems, redrive refused or stopped,
              migration cannot go on, unknown dead-letter id
          64  usage: unknown option, bad value, inverted range (the subcommand's usage is printed)
          65  bad input: JSONL file, profile, --value-file, unreadable record
          69  unavailable: no broker at the address given, or a topic missing (named with its prefix)
          70  any other failure
          75  timed out: the brokers answered but --timeout passed first
        """
}

/// A failure a command reports with its own exit status.
struct CommandFailure: Error, CustomStringConvertible {
    var status: ExitStatus
    var description: String

    init(_ status: ExitStatus, _ description: String) {
        self.status = status
        self.description = description
    }
}

/// Commands that talk to the brokers, so a bare transport error can name the address.
protocol BrokerCommand {
    var connection: TopicsCommand.Connection { get }
}

extension FleetCtl {
    /// Parses and runs a subcommand; every failure ends the process with its `ExitStatus` and
    /// one message on standard error. Argument errors found while parsing (including each
    /// command's `validate()`) print the subcommand's usage, as ArgumentParser does; a
    /// `ValidationError` a command throws while running does so too, instead of the root
    /// command's `Usage: fleetctl <subcommand>`.
    static func runMain() async {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            fail(error, command: command)
        }
    }

    private static func fail(_ error: any Error, command: any ParsableCommand) -> Never {
        if let validation = error as? ValidationError {
            let usage = usageString(for: type(of: command))
            report("Error: \(validation.message)\nUsage: \(usage)\n  See 'fleetctl \(commandPath(type(of: command))) --help' for more information.")
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        // ArgumentParser's own outcomes (`--help` and `help <command>`, which run as a command
        // that throws the request, ExitCode, CleanExit, parse errors) are its to print; every
        // other error it would report with exit 1, and those are classified here.
        if exitCode(for: error) != .failure || error is ExitCode { exit(withError: error) }
        let (status, message) = classify(error, address: (command as? any BrokerCommand)?.connection.address)
        report("Error: \(message)")
        Foundation.exit(status.rawValue)
    }

    /// The exit status and message of a failure.
    static func classify(_ error: any Error, address: String?) -> (ExitStatus, String) {
        switch error {
        case let failure as CommandFailure:
            return (failure.status, failure.description)
        case let error as FleetTopicReaderError:
            return (.unavailable, error.description)
        case let error as KafkaError:
            if error.isTimeout { return (.timedOut, error.description) }
            if error.isConnectionFailure {
                return (.unavailable, "cannot reach the Kafka brokers at \(address ?? "the configured address"): \(error.message)")
            }
            return (.software, error.description)
        case let error as DeadLetterError:
            switch error {
            case .notADeadLetterTopic, .nothingSelected, .fixNeedsOneRecord: return (.usage, error.description)
            case .unknownIDs: return (.finding, error.description)
            case .invalidFix: return (.dataError, error.description)
            case .markerNotWritten: return (.software, error.description)
            }
        case let error as ReplayError:
            return (.dataError, error.description)
        case let error as PartitionMigration.MigrationError:
            return (.finding, error.description)
        case let error as SimulateFailure:
            return (.dataError, error.description)
        default:
            return (.software, "\(error)")
        }
    }

    /// `dlq list` for `DLQCommand.List`: the names between `fleetctl` and the options.
    private static func commandPath(_ type: any ParsableCommand.Type) -> String {
        var path: [String] = []
        func search(_ node: any ParsableCommand.Type, _ trail: [String]) -> Bool {
            if node == type { path = trail; return true }
            for sub in node.configuration.subcommands {
                if search(sub, trail + [sub._commandName]) { return true }
            }
            return false
        }
        _ = search(FleetCtl.self, [])
        return path.joined(separator: " ")
    }

    private static func report(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

extension DecisionsCommand: BrokerCommand {}
extension ExplainCommand: BrokerCommand {}
extension ExportCommand: BrokerCommand {}
extension ReplayCommand: BrokerCommand {}
extension ProduceCommand: BrokerCommand {}
extension TopicsCommand.Create: BrokerCommand {}
extension TopicsCommand.Check: BrokerCommand {}
extension DLQCommand.List: BrokerCommand {}
extension DLQCommand.Show: BrokerCommand {}
extension DLQCommand.Redrive: BrokerCommand {}
extension PartitionsCommand.Migrate: BrokerCommand {}

extension Timestamp {
    /// The wall clock, for `--since 6h`-style ages (never read by the fleet's logic).
    static var wallClock: Timestamp {
        Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded()))
    }
}
