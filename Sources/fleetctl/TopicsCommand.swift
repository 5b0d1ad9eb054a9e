import ArgumentParser
import FleetModel
import FleetWorkers
import Foundation
import Kafka

struct TopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "topics",
        abstract: "Create and check the fleet's topics.",
        subcommands: [Create.self, Check.self, List.self])

    struct Connection: ParsableArguments {
        @Option(help: "Kafka bootstrap servers (host:port). Defaults to $FLEET_BOOTSTRAP_SERVERS.")
        var bootstrap: String?

        @Option(help: "Prefix of every physical topic name. Defaults to $FLEET_TOPIC_PREFIX.")
        var topicPrefix: String?

        var namespace: TopicNamespace {
            TopicNamespace(prefix: topicPrefix ?? ProcessInfo.processInfo.environment["FLEET_TOPIC_PREFIX"] ?? "")
        }

        /// The broker address plus any `KAFKA_*` properties (TLS, SASL) from the environment.
        func kafkaConfiguration() throws -> KafkaConfiguration {
            let environment = ProcessInfo.processInfo.environment
            guard let servers = bootstrap ?? environment["FLEET_BOOTSTRAP_SERVERS"] else {
                throw ValidationError("give --bootstrap or set FLEET_BOOTSTRAP_SERVERS")
            }
            return KafkaConfiguration(bootstrapServers: servers).merging(KafkaConfiguration.fromEnvironment(environment))
        }

        func admin() throws -> KafkaAdmin { try KafkaAdmin(configuration: kafkaConfiguration()) }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create every fleet topic (inputs, inboxes, outputs, state, history, DLQs) with its configs.",
            discussion: """
                All topics get the same partition count, which keeps each worker's input, state and \
                history co-partitioned. Existing topics are left alone; `topics check` reports any that disagree.
                """)
        @OptionGroup var connection: Connection
        @Option(help: "Partitions per topic.") var partitions: Int32 = 12
        @Option(help: "Replication factor (-1: the broker's default).") var replicationFactor: Int32 = -1

        func run() async throws {
            let admin = try connection.admin()
            try await TopicAdministration.create(
                admin: admin, partitions: partitions, replicationFactor: replicationFactor, namespace: connection.namespace)
            let counts = try await admin.partitionCounts(topics: TopicSpec.all.map { connection.namespace.physical($0.name) })
            for spec in TopicSpec.all {
                let name = connection.namespace.physical(spec.name)
                print("\(name)\t\(counts[name].map(String.init) ?? "missing")\t\(spec.role.rawValue)")
            }
            let problems = TopicAdministration.check(partitionCounts: counts, namespace: connection.namespace)
            for problem in problems { print("problem: \(problem)") }
            if !problems.isEmpty { throw ExitCode(1) }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Report fleet topics that are missing or not co-partitioned; exits 1 if any.")
        @OptionGroup var connection: Connection

        func run() async throws {
            let admin = try connection.admin()
            let counts = try await admin.partitionCounts(topics: nil)
            let problems = TopicAdministration.check(partitionCounts: counts, namespace: connection.namespace)
            if problems.isEmpty {
                print("ok: \(TopicSpec.all.count) topics present and co-partitioned")
                return
            }
            for problem in problems { print(problem) }
            throw ExitCode(1)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the fleet's topics, roles and configs (no broker needed).")
        func run() async throws {
            for spec in TopicSpec.all {
                let configs = spec.configs.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                print("\(spec.name)\t\(spec.role.rawValue)\t\(configs)")
            }
        }
    }
}
