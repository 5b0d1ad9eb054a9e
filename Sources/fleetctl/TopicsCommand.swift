import ArgumentParser
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Logging

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

        /// The bootstrap address as given (option, else environment), for error messages.
        var address: String? { bootstrap ?? ProcessInfo.processInfo.environment["FLEET_BOOTSTRAP_SERVERS"] }

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

        /// The tool's logger, for its clients' lines (librdkafka's included); `MultiCall` sets
        /// where they go and from which level.
        var logger: Logger { Logger(label: "fleetctl") }

        func admin() throws -> KafkaAdmin { try KafkaAdmin(configuration: kafkaConfiguration(), logger: logger) }

        /// A reader on this connection, once the brokers have answered: a wrong address fails
        /// here, within seconds for a refused connection or an unknown host and within
        /// `timeout` for one that does not answer, naming the address (exit 69).
        func reader(timeout: Int) async throws -> FleetTopicReader {
            let reader = FleetTopicReader(configuration: try kafkaConfiguration(), namespace: namespace, timeout: .seconds(timeout), logger: logger)
            _ = try await reader.physicalPartitionCounts(nil)
            return reader
        }
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
        @Option(help: "Give up reaching the brokers after this many seconds.") var timeout: Int = 30

        func run() async throws {
            _ = try await connection.reader(timeout: timeout)
            let admin = try connection.admin()
            try await TopicAdministration.create(
                admin: admin, partitions: partitions, replicationFactor: replicationFactor, namespace: connection.namespace)
            let counts = try await admin.partitionCounts(topics: TopicSpec.all.map { connection.namespace.physical($0.name) })
            for spec in TopicSpec.all {
                let name = connection.namespace.physical(spec.name)
                print("\(name)\t\(counts[name].map(String.init) ?? "missing")\t\(spec.role.rawValue)")
            }
            let generations = try await GenerationRegistry.read(
                configuration: try connection.kafkaConfiguration(), namespace: connection.namespace, logger: connection.logger)
            let problems = TopicAdministration.check(partitionCounts: counts, namespace: connection.namespace, generations: generations)
            for problem in problems { print("problem: \(problem)") }
            if !problems.isEmpty { throw ExitCode(1) }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Report fleet topics that are missing or not co-partitioned; exits 1 if any.",
            discussion: """
                Topics are named with their prefix (--topic-prefix / FLEET_TOPIC_PREFIX). After a \
                partition migration (fleetctl partitions migrate), every generation of a migrated \
                worker's topics up to the one fleet.generations names is checked too.
                """)
        @OptionGroup var connection: Connection
        @Option(help: "Give up reaching the brokers after this many seconds.") var timeout: Int = 30

        func run() async throws {
            let reader = try await connection.reader(timeout: timeout)
            let counts = try await reader.physicalPartitionCounts(nil)
            let generations = try await GenerationRegistry.read(configuration: reader.configuration, namespace: reader.namespace, logger: reader.logger)
            let problems = TopicAdministration.check(partitionCounts: counts, namespace: connection.namespace, generations: generations)
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
