import DeliveryPolicy
public import FleetModel
public import FleetSimulation
import SenderCore
import UpstreamProcessors

/// Something to do with the processor a worker runs, whatever its concrete type: start it on the
/// runtime (`WorkerLauncher`), or re-run a log with it (`fleetctl replay`).
public protocol WorkerProcessorVisitor {
    associatedtype Result
    func visit<P: UserProcessor>(_ processor: P) async throws -> Result
}

/// The one place that knows which processor each worker runs and how the profile configures it,
/// so a replay is built exactly as the worker was.
public enum WorkerProcessors {
    public static func visit<V: WorkerProcessorVisitor>(_ worker: Worker, profile: FleetProfile, _ visitor: V) async throws -> V.Result {
        let upstream = UpstreamProcessors(settings: profile.upstream)
        switch worker {
        case .score: return try await visitor.visit(upstream.score)
        case .sync: return try await visitor.visit(upstream.sync)
        case .reminder: return try await visitor.visit(upstream.reminder)
        case .access: return try await visitor.visit(upstream.access)
        case .delivery: return try await visitor.visit(DeliveryEngine(profile: profile.delivery))
        case .sender: return try await visitor.visit(SenderProcessor(policy: profile.sender))
        }
    }
}
