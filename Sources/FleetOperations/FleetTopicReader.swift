import Foundation
public import FleetWorkers
public import Kafka

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

    public init(configuration: KafkaConfiguration, namespace: TopicNamespace, timeout: Duration = .seconds(300)) {
        self.configuration = configuration
        self.namespace = namespace
        self.timeout = timeout
    }

    /// The partition count of each logical topic; throws naming any that does not exist.
    public func partitionCounts(_ topics: [String]) async throws -> [String: Int] {
        let admin = try KafkaAdmin(configuration: configuration)
        let physical = topics.map(namespace.physical)
        let counts = try await admin.partitionCounts(topics: physical)
        var result: [String: Int] = [:]
        var missing: [String] = []
        for (logical, name) in zip(topics, physical) {
            if let count = counts[name], count > 0 { result[logical] = count } else { missing.append(name) }
        }
        if !missing.isEmpty { throw FleetTopicReaderError.missingTopics(missing) }
        return result
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
            offsets, configuration: configuration, groupId: "fleetctl-reader-\(UUID().uuidString.prefix(8))", timeout: timeout)
        return messages
            .map { message in
                var message = message
                message.topic = namespace.logical(message.topic) ?? message.topic
                return message
            }
            .sorted { ($0.topic, $0.partition, $0.offset) < ($1.topic, $1.partition, $1.offset) }
    }
}

public enum FleetTopicReaderError: Error, CustomStringConvertible, Sendable {
    case missingTopics([String])

    public var description: String {
        switch self {
        case .missingTopics(let names): "missing topics: \(names.joined(separator: ", ")) (run `fleetctl topics create`)"
        }
    }
}
