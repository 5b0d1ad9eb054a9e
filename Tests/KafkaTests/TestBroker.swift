import FleetTestSupport
import Foundation
import Synchronization
import Kafka
import Testing

/// Where the integration tests find the broker, and unique names so parallel tests never share
/// a topic or group.
///
/// The address comes from `FLEET_KAFKA_BOOTSTRAP` (`eval "$(scripts/broker env)"`). Without it the
/// integration tests are skipped with a loud message — unless `CI=true`, where that is a failure.
enum TestBroker {
    static var bootstrap: String? { TestBrokerEnvironment.bootstrap }

    /// Trait condition for integration suites (skipped loudly outside CI, failing in CI).
    static var available: Bool { TestBrokerEnvironment.isAvailable(for: "KafkaTests") }

    /// The bootstrap address; records a failure (CI) when it is missing.
    static func requireBootstrap(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(bootstrap, "FLEET_KAFKA_BOOTSTRAP must be set in CI (scripts/broker start)", sourceLocation: sourceLocation)
    }

    /// A name no other test (or earlier run against the same broker) uses.
    static func unique(_ prefix: String) -> String {
        "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
    }

    static func configuration() throws -> KafkaConfiguration {
        KafkaConfiguration(bootstrapServers: try requireBootstrap())
    }

    /// Consumer settings for tests: the short group timeouts Tansu needs (DESIGN.md) and an eager
    /// assignor unless a test is about cooperative rebalancing (cooperative joins take 11–16 s).
    static func consumerConfiguration(group: String, strategy: KafkaConfiguration.AssignmentStrategy = .range) throws -> KafkaConfiguration {
        var configuration = try configuration()
        configuration.groupId = group
        configuration.sessionTimeoutMs = 2000
        configuration.heartbeatIntervalMs = 500
        configuration.assignmentStrategy = strategy
        configuration.autoOffsetReset = .earliest
        return configuration
    }

    /// Creates uniquely named topics, runs `body`, and deletes them whatever happens.
    static func withTopics<R>(_ prefix: String, count: Int = 1, partitions: Int32,
                              _ body: ([String]) async throws -> R) async throws -> R {
        let admin = try KafkaAdmin(configuration: try configuration(), logger: .tests)
        let names = (0..<count).map { _ in unique(prefix) }
        try await admin.createTopics(names.map { NewTopic(name: $0, partitions: partitions) })
        do {
            let result = try await body(names)
            try? await admin.deleteTopics(names)
            return result
        } catch {
            try? await admin.deleteTopics(names)
            throw error
        }
    }

    /// Reads from `consumer` until `count` messages arrived or `timeout` passed, and returns what
    /// arrived (callers check the count; fewer means the timeout struck).
    static func collect(_ consumer: KafkaConsumer, count: Int, timeout: Duration = .seconds(20)) async throws -> [KafkaMessage] {
        try await consumer.collect(count: count, timeout: timeout)
    }
}

/// Messages gathered by a reading task, readable from others.
final class MessageBuffer: Sendable {
    private let stored = Mutex<[KafkaMessage]>([])

    /// Appends and returns the new total.
    func append(_ batch: [KafkaMessage]) -> Int {
        stored.withLock { $0 += batch; return $0.count }
    }

    var messages: [KafkaMessage] { stored.withLock { $0 } }
}
