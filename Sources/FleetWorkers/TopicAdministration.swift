import FleetModel
public import Kafka

/// Creating the fleet's topics and checking they are co-partitioned (DESIGN.md principle 2).
public enum TopicAdministration {
    /// What `check` found wrong; empty when the topic set is complete and co-partitioned.
    public struct Problem: Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Creates every topic of `TopicSpec.all` with `partitions` partitions (the generation
    /// registry, a control topic, with one); existing ones are left as they are (run `check`
    /// afterwards to see whether they agree).
    public static func create(
        admin: KafkaAdmin, partitions: Int32, replicationFactor: Int32 = -1, namespace: TopicNamespace = TopicNamespace()
    ) async throws(KafkaError) {
        let topics = TopicSpec.all.map {
            NewTopic(name: namespace.physical($0.name), partitions: $0.role == .control ? 1 : partitions,
                     replicationFactor: replicationFactor, configs: $0.configs)
        }
        try await admin.createTopics(topics, ignoreExisting: true)
    }

    /// Reports missing topics and, per worker, input/state/history topics whose partition counts
    /// differ: a worker would refuse to start on them.
    public static func check(partitionCounts physicalCounts: [String: Int], namespace: TopicNamespace = TopicNamespace()) -> [Problem] {
        var partitionCounts: [String: Int] = [:]
        for (name, count) in physicalCounts {
            if let logical = namespace.logical(name) { partitionCounts[logical] = count }
        }
        var problems: [Problem] = []
        for spec in TopicSpec.all where partitionCounts[spec.name] == nil {
            problems.append(Problem(description: "missing topic \(spec.name)"))
        }
        for worker in Worker.allCases {
            let group = [worker.ingestTopic, worker.foldedTopic, worker.stateTopic, worker.historyTopic].compactMap { $0 }
            let counts = group.compactMap { name in partitionCounts[name].map { (name, $0) } }
            if Set(counts.map(\.1)).count > 1 {
                let listing = counts.map { "\($0.0)=\($0.1)" }.joined(separator: ", ")
                problems.append(Problem(description: "\(worker.rawValue): topics are not co-partitioned: \(listing)"))
            }
        }
        return problems
    }
}
