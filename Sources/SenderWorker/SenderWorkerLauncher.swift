import Foundation
import FleetModel
import FleetWorkers
import FleetService
import Kafka
import ProviderClients
import SenderEffect
import ServiceLifecycle

/// Starts the sender-worker (issue 17): the shared runtime folding `rin.sender.inbox` with the
/// `SenderProcessor` the profile's `sender:` section configures, and in the same service group
/// the effect stage that performs the attempts it decides, with the providers configured from
/// `SENDER_*` variables and the files they name (`ProviderSettings`).
public enum SenderWorkerLauncher {
    public static func run() async throws {
        try await WorkerLauncher.run(.sender) { context in
            let providers = try ProviderSettings.fromEnvironment(context.environment)
            let concurrency = try concurrency(context.environment)
            let effect = try ProviderEffect(
                settings: providers, logger: context.logger, metrics: SenderMetrics(factory: context.metrics))
            context.logger.info("providers configured", metadata: [
                // Endpoints only: keys and tokens never reach a log (`Secret`).
                "apns": "\(providers.apns?.endpoint ?? "off")", "fcm": "\(providers.fcm?.endpoint ?? "off")",
                "email": "\(providers.email?.endpoint ?? "off")", "concurrency": "\(concurrency)",
            ])
            let route = AnswerRoute()
            let stage = SendEffectStage(
                consumer: effectConsumer(context.settings), producer: effectProducer(context.settings), effect: effect,
                topics: effectTopics(context.settings.topics, inbox: route), concurrency: concurrency, logger: context.logger)
            let follower = InboxRouteFollower(
                route: route, configuration: context.settings.producerConfiguration, namespace: context.settings.topics,
                interval: context.settings.metadataCheckInterval, logger: context.logger)
            return [SendEffectService(stage: stage, effect: effect, follower: follower, logger: context.logger)]
        }
    }

    /// `SENDER_CONCURRENCY`: provider calls in flight at once.
    public static let concurrencyVariable = (name: "SENDER_CONCURRENCY", meaning: "provider calls in flight at once (default 64)")

    static func concurrency(_ environment: [String: String]) throws -> Int {
        guard let text = environment[concurrencyVariable.name], !text.isEmpty else { return 64 }
        guard let value = Int(text), (1...4096).contains(value) else {
            throw SettingsError("\(concurrencyVariable.name) must be a whole number in 1–4096, got '\(text)'")
        }
        return value
    }

    /// The physical attempts topic, and the inbox as `route` says (its generation follows the
    /// registry: `InboxRouteFollower`). The attempts topic is an output of the fold, not one of
    /// the topics a partition migration moves to a new generation.
    static func effectTopics(_ namespace: TopicNamespace, inbox route: AnswerRoute) -> SendEffectStage.TopicNames {
        SendEffectStage.TopicNames(attempts: namespace.physical(Topics.sendAttempts), inbox: route)
    }

    /// Its own consumer group (`<group>.effect`), beside the runtime's: the attempts topic is not
    /// co-partitioned work of the fold, and the stage commits its offsets in its transactions.
    static func effectConsumer(_ settings: WorkerSettings) -> KafkaConfiguration {
        var configuration = settings.consumerConfiguration
        configuration.groupId = settings.groupId + ".effect"
        configuration.groupInstanceId = settings.instanceId.map { $0 + "-effect" }
        configuration.clientId = Worker.sender.rawValue + "-effect"
        return configuration
    }

    /// Transactional whatever `FLEET_GUARANTEE` says (answers and offsets commit together), with
    /// an id stable per instance so a restarted instance fences its previous incarnation.
    static func effectProducer(_ settings: WorkerSettings) -> KafkaConfiguration {
        var configuration = settings.producerConfiguration
        let member = settings.instanceId ?? "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
        configuration.transactionalId = "\(settings.groupId)-effect-\(member)"
        configuration.clientId = Worker.sender.rawValue + "-effect"
        return configuration
    }
}
