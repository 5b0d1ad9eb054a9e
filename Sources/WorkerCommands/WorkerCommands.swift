public import ArgumentParser
import FleetWorkers
import FleetService
import ProviderClients
import SenderWorker

// The six workers' command lines, shared by their own executables (score-worker, …) and by the
// multi-call `fleetctl` of the image (deploy/Dockerfile), which runs the worker its name says.

/// The worker commands by executable name.
public enum WorkerCommands {
    public static func command(named name: String) -> (any AsyncParsableCommand.Type)? {
        switch name {
        case "score-worker": ScoreWorkerCommand.self
        case "sync-worker": SyncWorkerCommand.self
        case "reminder-worker": ReminderWorkerCommand.self
        case "access-worker": AccessWorkerCommand.self
        case "delivery-worker": DeliveryWorkerCommand.self
        case "sender-worker": SenderWorkerCommand.self
        default: nil
        }
    }
}

/// The score worker: `score-worker` (its own executable, or the image's multi-call `fleetctl` under that name).
public struct ScoreWorkerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "score-worker",
        abstract: "Reads rin.score.batches and writes score intents (updated, milestones) to rin.delivery.inbox.",
        discussion: WorkerLauncher.environmentHelp)

    public init() {}

    public func run() async throws {
        try await WorkerLauncher.run(.score)
    }
}

/// The sync worker: `sync-worker` (its own executable, or the image's multi-call `fleetctl` under that name).
public struct SyncWorkerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sync-worker",
        abstract: "Reads rin.contacts.sync-results and writes contact intents (dedup, conflicts, enrichment) to rin.delivery.inbox.",
        discussion: WorkerLauncher.environmentHelp)

    public init() {}

    public func run() async throws {
        try await WorkerLauncher.run(.sync)
    }
}

/// The reminder worker: `reminder-worker` (its own executable, or the image's multi-call `fleetctl` under that name).
public struct ReminderWorkerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "reminder-worker",
        abstract: "Forwards rin.reminders into rin.reminder.inbox, keeps each user's reminders and writes reminder intents to rin.delivery.inbox when they are due.",
        discussion: WorkerLauncher.environmentHelp)

    public init() {}

    public func run() async throws {
        try await WorkerLauncher.run(.reminder)
    }
}

/// The access worker: `access-worker` (its own executable, or the image's multi-call `fleetctl` under that name).
public struct AccessWorkerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "access-worker",
        abstract: "Reads rin.security.access-requests and writes security intents to rin.delivery.inbox at once (P-ACC-1).",
        discussion: WorkerLauncher.environmentHelp)

    public init() {}

    public func run() async throws {
        try await WorkerLauncher.run(.access)
    }
}

/// The delivery worker: `delivery-worker` (its own executable, or the image's multi-call `fleetctl` under that name).
public struct DeliveryWorkerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "delivery-worker",
        abstract: "Forwards rin.app.activity into rin.delivery.inbox and decides, per user, what is delivered: deliveries, one decision per intent, smart-section items and retention events.",
        discussion: WorkerLauncher.environmentHelp)

    public init() {}

    public func run() async throws {
        try await WorkerLauncher.run(.delivery)
    }
}

/// The sender worker: `sender-worker` (its own executable, or the image's multi-call `fleetctl` under that name).
public struct SenderWorkerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sender-worker",
        abstract: "Forwards rin.notify.deliveries, rin.devices and settings changes into rin.sender.inbox, decides per user every push and email attempt (retries, backoff, token invalidation, email fallback, receipts), and performs the attempts against APNs, FCM and the email API.",
        discussion: WorkerLauncher.environmentHelp + "\n\nThe providers come from these variables (files hold the secrets):\n"
            + (ProviderSettings.variables + [SenderWorkerLauncher.concurrencyVariable])
                .map { "  \($0.name)\n      \($0.meaning)" }.joined(separator: "\n")
            + "\n\nThe retry policy comes from the profile's `sender:` section.")

    public init() {}

    public func run() async throws {
        try await SenderWorkerLauncher.run()
    }
}
