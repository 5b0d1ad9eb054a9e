import ArgumentParser
import FleetWorkers

/// The score worker executable: configuration from the environment (see `--help`), logic from the
/// policy profile, everything else from the shared runtime.
@main
struct ScoreWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "score-worker",
        abstract: "Reads rin.score.batches and writes score intents (updated, milestones) to rin.delivery.inbox.",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.score)
    }
}
