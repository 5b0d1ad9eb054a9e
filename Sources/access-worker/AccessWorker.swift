import ArgumentParser
import FleetWorkers

/// The access worker executable: configuration from the environment (see `--help`), logic from the
/// policy profile, everything else from the shared runtime.
@main
struct AccessWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "access-worker",
        abstract: "Reads rin.security.access-requests and writes security intents to rin.delivery.inbox at once (P-ACC-1).",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.access)
    }
}
