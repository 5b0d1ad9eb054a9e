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
    /// differ: a worker would refuse to start on them. Topics are named as the brokers know them
    /// (with the namespace's prefix).
    ///
    /// With `generations` (the registry, `fleet.generations`), a worker that migrated is also
    /// checked on every later generation of its topics up to the one it runs on: each of its
    /// log, changelog, history and the log's DLQ must exist, and the first three must share the
    /// generation's partition count (after a migration generation 1 stays needed: its log is an
    /// input until retention empties it).
    public static func check(
        partitionCounts physicalCounts: [String: Int], namespace: TopicNamespace = TopicNamespace(),
        generations: GenerationMap = GenerationMap()
    ) -> [Problem] {
        var partitionCounts: [String: Int] = [:]
        for (name, count) in physicalCounts {
            if let logical = namespace.logical(name) { partitionCounts[logical] = count }
        }
        var problems: [Problem] = []
        for spec in TopicSpec.all where partitionCounts[spec.name] == nil {
            problems.append(Problem(description: "missing topic \(namespace.physical(spec.name))"))
        }
        func coPartitioned(_ worker: Worker, _ group: [String], generation: Int) {
            let counts = group.compactMap { name in partitionCounts[name].map { (name, $0) } }
            if Set(counts.map(\.1)).count > 1 {
                let listing = counts.map { "\(namespace.physical($0.0))=\($0.1)" }.joined(separator: ", ")
                let which = generation > 1 ? " (generation \(generation))" : ""
                problems.append(Problem(description: "\(worker.rawValue)\(which): topics are not co-partitioned: \(listing)"))
            }
        }
        for worker in Worker.allCases {
            coPartitioned(worker, worker.ingestTopics + [worker.foldedTopic, worker.stateTopic, worker.historyTopic], generation: 1)
        }
        for worker in Worker.allCases where worker.ownsItsLog {
            let entry = generations.entry(for: worker)
            guard entry.generation > 1 else { continue }
            for generation in 2...entry.generation {
                let topics = worker.topics(generation: generation)
                for name in topics.all where partitionCounts[name] == nil {
                    problems.append(Problem(description: "missing topic \(namespace.physical(name)) (\(worker.rawValue) generation \(generation))"))
                }
                coPartitioned(worker, [topics.log, topics.state, topics.history], generation: generation)
                if generation == entry.generation, entry.partitions > 0, let count = partitionCounts[topics.log], count != entry.partitions {
                    problems.append(Problem(description:
                        "\(worker.rawValue) (generation \(generation)): \(namespace.physical(topics.log)) has \(count) partitions, fleet.generations says \(entry.partitions)"))
                }
            }
        }
        return problems
    }
}
