import DeliveryPolicy
import FleetWorkers
import Logging
import ServiceLifecycle

/// The delivery worker's runtime running in this process as the deployed worker runs it (a
/// service in a `ServiceGroup`), until `stop` shuts it down as SIGTERM would: last unit
/// committed, group left.
struct RunningWorker {
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts `WorkerRuntime` with `DeliveryEngine(profile:)` and returns at once; `observer`
    /// says when it is ready.
    init(settings: WorkerSettings, profile: PolicyProfile, observer: any RuntimeObserver, logger: Logger) {
        let runtime = WorkerRuntime(
            settings: settings, processor: DeliveryEngine(profile: profile), observer: observer, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: runtime)], logger: logger))
        self.group = group
        task = Task { try await group.run() }
    }

    /// Shuts the runtime down gracefully; throws what made it fail, if it did.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
