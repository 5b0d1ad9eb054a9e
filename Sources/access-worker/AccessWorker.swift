import ArgumentParser
import FleetModel
import FleetWorkers
import UpstreamProcessors

/// Turns access requests and security alerts into immediate security intents (P-ACC-1).
@main
struct AccessWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "access-worker",
        abstract: "Reads rin.security.access-requests and writes security intents to rin.delivery.inbox.",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.access, processor: AccessProcessor())
    }
}

