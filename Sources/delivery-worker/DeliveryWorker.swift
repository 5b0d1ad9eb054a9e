import ArgumentParser
import FleetModel
import FleetWorkers

/// Decides, per user, which intents of rin.delivery.inbox are delivered and records why.
@main
struct DeliveryWorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delivery-worker",
        abstract: "Reads rin.delivery.inbox and writes deliveries and one decision per intent.",
        discussion: WorkerLauncher.environmentHelp)

    func run() async throws {
        try await WorkerLauncher.run(.delivery, processor: DailyCapPolicy())
    }
}

