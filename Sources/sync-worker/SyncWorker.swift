import ArgumentParser
import FleetWorkers

/// The sync worker executable: configuration from the environment (see `--help`), logic from the
/// policy profile, everything else from the shared runtime.
@main
struct SyncWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-worker",
        abstract: "Reads rin.contacts.sync-results and writes contact intents (dedup, conflicts, enrichment) to rin.delivery.inbox.",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.sync)
    }
}
