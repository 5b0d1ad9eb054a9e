import ArgumentParser
import FleetWorkers

/// The reminder worker executable: configuration from the environment (see `--help`), logic from the
/// policy profile, everything else from the shared runtime.
@main
struct ReminderWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reminder-worker",
        abstract: "Forwards rin.reminders into rin.reminder.inbox, keeps each user's reminders and writes reminder intents to rin.delivery.inbox when they are due.",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.reminder)
    }
}
