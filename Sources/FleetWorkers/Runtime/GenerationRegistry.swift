import Foundation
public import FleetModel
public import Kafka
public import Logging

/// Which generation of its topics each worker runs on, and where a partition migration stands
/// (see `TopicGenerations` in FleetModel and `fleetctl partitions migrate`).
///
/// Kept in `fleet.generations`, one partition, keyed by worker; the last record per worker counts.
/// Workers read it at start and re-read it with the partition-count check: a change to their own
/// entry makes them restart their runtime on the new topics, a change to the owner of an inbox
/// they write into re-routes those writes at the next unit boundary. A worker with no entry (or
/// no registry topic at all) runs on generation 1.
public struct GenerationEntry: Codable, Hashable, Sendable {
    /// Where a migration to `generation` stands.
    public enum Phase: String, Codable, Sendable {
        /// The new topics exist; the worker no longer folds generation `generation - 1` and carries
        /// that log's records over into the new one, while the migration re-keys the state.
        /// Producers still write into the old log, so every user's records keep their order.
        case cutover
        /// The state is re-keyed: the worker folds the new generation, producers write into it,
        /// and records still arriving in the old log are carried over.
        case active
    }

    public var worker: Worker
    public var generation: Int
    public var partitions: Int
    public var phase: Phase

    public init(worker: Worker, generation: Int, partitions: Int, phase: Phase) {
        self.worker = worker
        self.generation = generation
        self.partitions = partitions
        self.phase = phase
    }

    /// The generation whose log producers write into: the old one until the new one is active.
    public var writeGeneration: Int { phase == .active ? generation : generation - 1 }

    /// The generation the worker folds, nil while a cutover waits for the re-keyed state.
    public var foldGeneration: Int? { phase == .active ? generation : nil }
}

/// Every worker's entry of the registry.
public struct GenerationMap: Hashable, Sendable {
    public var entries: [Worker: GenerationEntry]

    public init(entries: [Worker: GenerationEntry] = [:]) { self.entries = entries }

    /// The worker's entry; generation 1, active, when it never migrated (`partitions` 0: unknown).
    public func entry(for worker: Worker) -> GenerationEntry {
        entries[worker] ?? GenerationEntry(worker: worker, generation: 1, partitions: 0, phase: .active)
    }

    /// The logical topic a record addressed to the generation-1 inbox `topic` goes to now; any
    /// other topic is returned unchanged.
    public func route(_ topic: String) -> String {
        guard let owner = Worker.owner(ofInbox: topic) else { return topic }
        return Topics.named(owner.foldedTopic, generation: entry(for: owner).writeGeneration)
    }
}

public enum GenerationRegistry {
    /// The registry record announcing `entry`.
    public static func record(_ entry: GenerationEntry, namespace: TopicNamespace) throws -> ProducerRecord {
        ProducerRecord(
            topic: namespace.physical(Topics.generations), partition: 0, key: Array(entry.worker.rawValue.utf8),
            value: try CanonicalJSONEncoder.encode(entry))
    }

    /// Reads the whole registry (it is small: a few records per migration ever made). A missing
    /// registry topic means no worker ever migrated. A caller that keeps an admin client (a
    /// worker's periodic check) passes it instead of having one made per read.
    public static func read(
        configuration: KafkaConfiguration, namespace: TopicNamespace, admin: KafkaAdmin? = nil, logger: Logger
    ) async throws -> GenerationMap {
        let topic = namespace.physical(Topics.generations)
        let admin = try admin ?? KafkaAdmin(configuration: configuration, logger: logger)
        let counts = try await admin.partitionCounts(topics: [topic])
        guard let count = counts[topic], count > 0 else { return GenerationMap() }
        let messages = try await KafkaConsumer.readToEnd(
            [TopicPartition(topic, 0): KafkaConsumer.beginning], configuration: configuration,
            groupId: "fleet-generations-reader", settle: .milliseconds(200), timeout: .seconds(60), logger: logger)
        return try map(of: messages)
    }

    /// `read` through the runtime's log clients (`LogClients`), with the admin it keeps.
    public static func read(
        namespace: TopicNamespace, clients: any LogClients, admin: (any LogAdmin)? = nil
    ) async throws -> GenerationMap {
        let topic = namespace.physical(Topics.generations)
        let admin = try admin ?? clients.makeAdmin()
        let counts = try await admin.partitionCounts(of: [topic])
        guard let count = counts[topic], count > 0 else { return GenerationMap() }
        let messages = try await clients.readToEnd(
            [TopicPartition(topic, 0): KafkaConsumer.beginning], purpose: "fleet-generations-reader")
        return try map(of: messages)
    }

    /// The map the registry's records describe, in offset order.
    public static func map(of messages: [KafkaMessage]) throws -> GenerationMap {
        var map = GenerationMap()
        for message in messages.sorted(by: { $0.offset < $1.offset }) {
            guard let value = message.value else { continue }
            do {
                let entry = try JSONDecoder().decode(GenerationEntry.self, from: Data(value))
                map.entries[entry.worker] = entry
            } catch {
                throw RegistryError(description: "\(Topics.generations)@\(message.offset): unreadable entry: \(error)")
            }
        }
        return map
    }

    public struct RegistryError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }
}
