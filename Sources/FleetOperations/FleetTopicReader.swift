import Foundation
public import FleetWorkers
public import Kafka
public import Logging

/// Reads fleet topics by logical name for the operator tools (`explain`, `replay`, `dlq`,
/// `partitions migrate`), without joining any consumer group and without writing anything.
///
/// Every read goes to each partition's end as of the call (`KafkaConsumer.readToEnd`), so a tool
/// answers about a fixed prefix of the log even while the fleet keeps writing. Messages come back
/// with logical topic names, the names ids and coordinates use.
public struct FleetTopicReader: Sendable {
    public var configuration: KafkaConfiguration
    public var namespace: TopicNamespace
    public var timeout: Duration
    /// Gets the clients' lines (librdkafka's included): the tool's logger.
    public var logger: Logger

    public init(configuration: KafkaConfiguration, namespace: TopicNamespace, timeout: Duration = .seconds(300), logger: Logger) {
        self.configuration = configuration
        self.namespace = namespace
        self.timeout = timeout
        self.logger = logger
    }

    /// The partition count of each logical topic; throws naming any that does not exist (with
    /// its prefix, as the brokers know it), or naming the address when no broker answers.
    public func partitionCounts(_ topics: [String]) async throws -> [String: Int] {
        let physical = topics.map(namespace.physical)
        let counts = try await physicalPartitionCounts(physical)
        var result: [String: Int] = [:]
        var missing: [String] = []
        for (logical, name) in zip(topics, physical) {
            if let count = counts[name], count > 0 { result[logical] = count } else { missing.append(name) }
        }
        if !missing.isEmpty { throw FleetTopicReaderError.missingTopics(missing) }
        return result
    }

    /// Partition counts of physical topics (nil: every topic), failing fast when no broker can be
    /// reached: `FleetTopicReaderError.unreachable` names the bootstrap address and librdkafka's
    /// reason within seconds for a refused connection or an unknown host, and within `timeout`
    /// for brokers that do not answer at all.
    public func physicalPartitionCounts(_ physical: [String]?) async throws -> [String: Int] {
        let admin = try KafkaAdmin(configuration: configuration, logger: logger)
        do {
            return try await admin.partitionCounts(topics: physical, timeout: timeout, failFast: .seconds(2))
        } catch {
            throw FleetTopicReaderError.unreachable(
                bootstrap: configuration.bootstrapServers ?? "(no bootstrap.servers)", waited: timeout, reason: error.message)
        }
    }

    /// Streams the given logical partitions from the given offsets (`KafkaConsumer.beginning`
    /// for the first record) to where each ended when the call began, handing each record to
    /// `body` with its logical topic name, in offset order within each partition (partitions
    /// interleave). Memory stays bounded by a few fetched batches whatever the topics hold.
    public func stream(_ offsets: [TopicPartition: Int64], body: (KafkaMessage) async throws -> Void) async throws {
        var physical: [TopicPartition: Int64] = [:]
        for (partition, offset) in offsets { physical[TopicPartition(namespace.physical(partition.topic), partition.partition)] = offset }
        guard !physical.isEmpty else { return }
        try await KafkaConsumer.readToEnd(
            physical, configuration: configuration, groupId: "fleetctl-reader-\(UUID().uuidString.prefix(8))", timeout: timeout, logger: logger
        ) { batch in
            for var message in batch {
                message.topic = namespace.logical(message.topic) ?? message.topic
                try await body(message)
            }
        }
    }

    /// Every partition of each logical topic, from its beginning: the start offsets `stream`
    /// takes to read whole topics.
    public func beginnings(of topics: [String]) async throws -> [TopicPartition: Int64] {
        let counts = try await partitionCounts(topics)
        var offsets: [TopicPartition: Int64] = [:]
        for topic in topics {
            for partition in 0..<Int32(counts[topic] ?? 0) { offsets[TopicPartition(topic, partition)] = KafkaConsumer.beginning }
        }
        return offsets
    }

    /// Every record of `topics` (all partitions, or only `partitions` when given), from `start`
    /// per logical partition (the beginning when absent), in partition order then offset order.
    public func read(
        _ topics: [String], partitions: Set<Int32>? = nil, from start: [TopicPartition: Int64] = [:]
    ) async throws -> [KafkaMessage] {
        let counts = try await partitionCounts(topics)
        var offsets: [TopicPartition: Int64] = [:]
        for topic in topics {
            for partition in 0..<Int32(counts[topic] ?? 0) where partitions?.contains(partition) ?? true {
                offsets[TopicPartition(namespace.physical(topic), partition)] =
                    start[TopicPartition(topic, partition)] ?? KafkaConsumer.beginning
            }
        }
        guard !offsets.isEmpty else { return [] }
        let messages = try await KafkaConsumer.readToEnd(
            offsets, configuration: configuration, groupId: "fleetctl-reader-\(UUID().uuidString.prefix(8))", timeout: timeout, logger: logger)
        return messages
            .map { message in
                var message = message
                message.topic = namespace.logical(message.topic) ?? message.topic
                return message
            }
            .sorted { ($0.topic, $0.partition, $0.offset) < ($1.topic, $1.partition, $1.offset) }
    }
}

/// Why a tool could not read the fleet's topics at all. Both mean "unavailable" (exit 69 in
/// fleetctl), as opposed to an answer or a usage error.
public enum FleetTopicReaderError: Error, CustomStringConvertible, Sendable {
    /// Physical names (with the topic prefix), as the brokers know them.
    case missingTopics([String])
    /// No broker answered at `bootstrap`; `reason` is librdkafka's last connection error.
    case unreachable(bootstrap: String, waited: Duration, reason: String)

    public var description: String {
        switch self {
        case .missingTopics(let names):
            "missing topic\(names.count == 1 ? "" : "s"): \(names.joined(separator: ", ")) (check --topic-prefix / FLEET_TOPIC_PREFIX, or run `fleetctl topics create`)"
        case .unreachable(let bootstrap, let waited, let reason):
            "cannot reach the Kafka brokers at \(bootstrap) (--bootstrap / FLEET_BOOTSTRAP_SERVERS): \(reason) (waited at most \(waited.components.seconds) s, --timeout)"
        }
    }
}
