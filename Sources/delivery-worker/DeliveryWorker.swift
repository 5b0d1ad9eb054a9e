import ArgumentParser
import FleetWorkers

/// The delivery worker executable: configuration from the environment (see `--help`), logic from the
/// policy profile, everything else from the shared runtime.
@main
struct DeliveryWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delivery-worker",
        abstract: "Forwards rin.app.activity into rin.delivery.inbox and decides, per user, what is delivered: deliveries, one decision per intent, smart-section items and retention events.",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.delivery)
    }
}
