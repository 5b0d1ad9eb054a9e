import FleetModel
import FleetWorkers
import Kafka
import Logging
import SenderEffect

/// Keeps the effect stage's `AnswerRoute` on the generation of `rin.sender.inbox` that the
/// generation registry says producers write into (`GenerationMap.route`), as every other
/// writer of an inbox does: read at start, then every `FLEET_METADATA_CHECK_INTERVAL_MS`. So a
/// `fleetctl partitions migrate --worker sender-worker` moves the answers with the deliveries:
/// into the old log until the new generation is active (the runtime carries them over), into the
/// new one after.
struct InboxRouteFollower: Sendable {
    let route: AnswerRoute
    let configuration: KafkaConfiguration
    let namespace: TopicNamespace
    let interval: Duration
    let logger: Logger

    /// Runs until cancelled. A failed read keeps the route as it was and is tried again at the
    /// next interval; until the first read succeeds the stage writes nothing (`AnswerRoute`).
    func run() async {
        var admin: KafkaAdmin?
        while !Task.isCancelled {
            do {
                let client = try admin ?? KafkaAdmin(configuration: configuration, logger: logger)
                admin = client
                let map = try await GenerationRegistry.read(configuration: configuration, namespace: namespace, admin: client, logger: logger)
                let inbox = namespace.physical(map.route(Topics.senderInbox))
                if route.set(inbox) {
                    logger.notice("effect stage answers go to \(inbox)", metadata: ["generation": "\(map.entry(for: .sender).writeGeneration)"])
                }
            } catch {
                logger.warning("generation registry check failed; answers keep their route", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
