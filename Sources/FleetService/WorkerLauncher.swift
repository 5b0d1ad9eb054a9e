public import FleetWorkers
import FleetSimulation
import Foundation
public import CoreMetrics
public import FleetModel
public import Logging
import Prometheus
public import ServiceLifecycle

/// What a companion service of a worker (`WorkerLauncher.run(_:companions:)`) is made from: the
/// worker's settings, the process environment (for its own variables), the metrics registry
/// `/metrics` exports, and the worker's logger.
public struct WorkerCompanionContext: Sendable {
    public var settings: WorkerSettings
    public var environment: [String: String]
    public var metrics: any MetricsFactory
    public var logger: Logger
}

/// Starts a worker executable: settings from the environment, the policy profile, logging, and
/// a service group that turns SIGTERM/SIGINT into a graceful shutdown (finish and commit the
/// open unit, leave the group, flush).
public enum WorkerLauncher {
    /// Runs `worker` with the processor its profile configures, until SIGTERM/SIGINT.
    ///
    /// - Parameter companions: services that run next to the runtime in the same service group
    ///   (the sender's effect stage): made once the settings are read; a failure to make them
    ///   (bad configuration) stops the worker with its message before anything starts. When one
    ///   ends or fails, the whole group shuts down gracefully.
    public static func run(
        _ worker: Worker, companions: @Sendable (WorkerCompanionContext) throws -> [any Service] = { _ in [] }
    ) async throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: WorkerSettings
        let profile: FleetProfile
        do {
            settings = try WorkerSettings(worker: worker, environment: environment)
            profile = try FleetProfile(ProfileChoice.resolve(settings.profile))
        } catch {
            FileHandle.standardError.write(Data("\(worker.rawValue): \(error)\n".utf8))
            throw ExitWithMessage()
        }
        let level = Logger.Level(rawValue: settings.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: worker.rawValue)
        let registry = PrometheusCollectorRegistry()
        let extra: [any Service]
        do {
            extra = try companions(WorkerCompanionContext(
                settings: settings, environment: environment, metrics: PrometheusMetricsFactory(registry: registry), logger: logger))
        } catch {
            FileHandle.standardError.write(Data("\(worker.rawValue): \(error)\n".utf8))
            throw ExitWithMessage()
        }
        try await WorkerProcessors.visit(worker, profile: profile, Serve(settings: settings, registry: registry, companions: extra, logger: logger))
    }

    /// Runs whichever processor the worker's profile configures.
    private struct Serve: WorkerProcessorVisitor {
        let settings: WorkerSettings
        let registry: PrometheusCollectorRegistry
        let companions: [any Service]
        let logger: Logger
        func visit<P: UserProcessor>(_ processor: P) async throws {
            try await serve(settings, processor, registry: registry, companions: companions, logger: logger)
        }
    }

    /// The runtime, its companions and its HTTP port in one service group: the port comes up
    /// first (so `/readyz` says "starting" rather than refusing connections), and ends when the
    /// runtime ends, whichever way.
    private static func serve<P: UserProcessor>(
        _ settings: WorkerSettings, _ processor: P, registry: PrometheusCollectorRegistry, companions: [any Service], logger: Logger
    ) async throws {
        let metrics = WorkerMetrics(worker: settings.worker.rawValue, registry: registry)
        let health = RuntimeHealth()
        let probes = ProbeServer(
            host: settings.httpHost, port: settings.httpPort, registry: registry,
            health: { health.health }, readiness: { health.readiness }, logger: logger)
        let runtime = WorkerRuntime(settings: settings, processor: processor, observer: metrics, health: health, logger: logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: probes),
                    .init(
                        service: runtime, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup),
                ] + companions.map {
                    .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch let error as WorkerStopped {
            FileHandle.standardError.write(Data("\(settings.worker.rawValue): \(error.description)\n".utf8))
            throw ExitWithMessage()
        } catch let error as TopicLayout.Mismatch {
            FileHandle.standardError.write(Data("\(error.description)\n".utf8))
            throw ExitWithMessage()
        }
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

/// The worker already printed why it stops; exit non-zero without repeating it.
public struct ExitWithMessage: Error, CustomStringConvertible {
    public var description: String { "stopped (see the message above)" }
}
