import Foundation
public import FleetModel
import Logging
import ServiceLifecycle

/// Starts a worker executable: settings from the environment, logging, and a service group that
/// turns SIGTERM/SIGINT into a graceful shutdown (finish and commit the batch, leave the group).
public enum WorkerLauncher {
    public static func run<P: UserProcessor>(_ worker: Worker, processor: P) async throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: WorkerSettings
        do {
            settings = try WorkerSettings(worker: worker, environment: environment)
        } catch {
            FileHandle.standardError.write(Data("\(worker.rawValue): \(error)\n".utf8))
            throw error
        }
        let level = Logger.Level(rawValue: settings.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: worker.rawValue)
        let service = FoldWorker(settings: settings, processor: processor, logger: logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }

    /// The `--help` text shared by the worker executables: what they read from the environment.
    public static var environmentHelp: String {
        var lines = ["Configuration comes from environment variables:"]
        for variable in WorkerEnvironment.all {
            let def = variable.defaultValue.map { " (default: \($0))" } ?? ""
            lines.append("  \(variable.name)\(def)\n      \(variable.meaning)")
        }
        return lines.joined(separator: "\n")
    }
}
