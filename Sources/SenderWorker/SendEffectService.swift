import Logging
import ProviderClients
import SenderEffect
public import ServiceLifecycle

/// The sender's effect stage as a service of the sender-worker's service group, next to the
/// runtime that folds `rin.sender.inbox`: reads `rin.sender.attempts`, calls the providers and
/// writes the answers back into the inbox. A graceful shutdown stops it between batches (a
/// batch's calls finish and their answers commit with its offsets); the provider connections
/// are closed after. Beside the stage, `InboxRouteFollower` keeps its answers on the inbox
/// generation the registry names.
public struct SendEffectService: Service {
    let stage: SendEffectStage
    let effect: ProviderEffect
    let follower: InboxRouteFollower
    let logger: Logger

    init(stage: SendEffectStage, effect: ProviderEffect, follower: InboxRouteFollower, logger: Logger) {
        self.stage = stage; self.effect = effect; self.follower = follower; self.logger = logger
    }

    public func run() async throws {
        var failure: (any Error)?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await follower.run() }
                // Ends between batches on a graceful shutdown (SendEffectStage.run); the follower with it.
                try await stage.run()
                group.cancelAll()
            }
        } catch is CancellationError {
            // Cancelled: what was not committed is read again by the next run, same attempt ids.
        } catch {
            failure = error
        }
        do {
            try await effect.shutdown()
        } catch {
            logger.warning("closing the provider connections failed", metadata: ["error": "\(error)"])
        }
        if let failure {
            logger.error("effect stage failed", metadata: ["error": "\(failure)"])
            throw failure
        }
        logger.info("effect stage stopped")
    }
}
