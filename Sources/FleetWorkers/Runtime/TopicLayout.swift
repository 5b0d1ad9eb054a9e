public import FleetModel
import Kafka

/// The topics one worker reads and owns in the generation it runs on, and the start-up check
/// that they exist and are co-partitioned (DESIGN.md principle 2).
///
/// In generation 1 a worker folds its log (`Worker.foldedTopic`) with `<worker>.state` and
/// `.history`, and an inbox worker's ingest stage forwards its external topics into the log. After
/// a partition migration (`GenerationEntry`) it runs on the new generation's topics, and the
/// previous generation's log becomes one more source whose records are carried over into the new
/// log, ids unchanged; during the cutover it folds nothing.
///
/// A value fixed at start: the names the runtime compares every record against (`foldedTopic`,
/// `stateTopic`, `historyTopic`) are worked out once, not on each access (they were built anew
/// for every record: ~1.5 % of a busy delivery worker's CPU).
public struct TopicLayout: Sendable, Hashable {
    public let worker: Worker
    public let namespace: TopicNamespace
    /// The worker's registry entry: which generation, and whether it is folded yet.
    public let entry: GenerationEntry
    /// The logical names of the generation's log, changelog and history.
    public let topics: GenerationTopics
    /// The physical names of the generation's log, changelog and history.
    public let foldedTopic: String
    public let stateTopic: String
    public let historyTopic: String

    public init(worker: Worker, namespace: TopicNamespace, generations: GenerationMap = GenerationMap()) {
        self.worker = worker
        self.namespace = namespace
        self.entry = generations.entry(for: worker)
        self.topics = worker.topics(generation: entry.generation)
        self.foldedTopic = namespace.physical(topics.log)
        self.stateTopic = namespace.physical(topics.state)
        self.historyTopic = namespace.physical(topics.history)
    }

    /// Whether this layout folds its log (false while a cutover waits for the re-keyed state).
    public var folds: Bool { entry.foldGeneration != nil }

    /// Logical names of the topics that must share one partition count: in generation 1 the
    /// ingest topics (if any), the folded log, the changelog and the history; in later
    /// generations the log, changelog and history (the ingest stage re-keys by user, and the
    /// generation exists because the count changed).
    public var coPartitioned: [String] {
        if entry.generation <= 1 {
            return worker.ingestTopics + [worker.foldedTopic, worker.stateTopic, worker.historyTopic]
        }
        return [topics.log, topics.state, topics.history]
    }

    /// Logical names of every topic the layout needs to exist.
    public var required: [String] {
        var names = coPartitioned
        if entry.generation > 1 { names += worker.ingestTopics }
        if let carried = carriedLogical { names.append(carried) }
        return names
    }

    /// The ingest sources by physical topic name.
    public var ingestSources: [String: IngestSource] {
        Dictionary(uniqueKeysWithValues: worker.ingestSources.map { (namespace.physical($0.topic), $0) })
    }
    /// The ingest topics (physical), in the worker's order.
    public var ingestTopics: [String] { worker.ingestTopics.map(namespace.physical) }

    /// The previous generation's log (logical), carried over into this generation's log.
    public var carriedLogical: String? {
        entry.generation > 1 ? worker.topics(generation: entry.generation - 1).log : nil
    }

    /// The previous generation's log (physical).
    public var carriedTopic: String? { carriedLogical.map(namespace.physical) }

    /// The previous generation's changelog (physical), where cuts are written.
    public var carriedStateTopic: String? {
        entry.generation > 1 ? namespace.physical(worker.topics(generation: entry.generation - 1).state) : nil
    }

    /// What the consumer subscribes to.
    public var subscribed: [String] {
        var names: [String] = folds ? [foldedTopic] : []
        names += ingestTopics
        if let carriedTopic { names.append(carriedTopic) }
        return names
    }

    /// Topics whose newly assigned partitions wait paused: folded ones for their state, carried
    /// ones for their cut.
    public var pausedOnAssignment: Set<String> {
        var names: Set<String> = folds ? [foldedTopic] : []
        if let carriedTopic { names.insert(carriedTopic) }
        return names
    }

    /// Why a worker refuses to run on the topics it found.
    public struct Mismatch: Error, CustomStringConvertible, Sendable, Hashable {
        public var description: String
    }

    /// The common partition count of `coPartitioned`, given the cluster's counts by physical
    /// name; throws naming every missing topic, or every topic and its count when they differ.
    public func partitionCount(in counts: [String: Int]) throws(Mismatch) -> Int {
        let missing = required.map(namespace.physical).filter { counts[$0] == nil }
        if !missing.isEmpty {
            let hint = entry.generation > 1
                ? "(generation \(entry.generation): `fleetctl partitions migrate --worker \(worker.rawValue)` creates them)"
                : "(create them with `fleetctl topics create`)"
            throw Mismatch(description: "\(worker.rawValue) refuses to start: missing topic(s) \(missing.joined(separator: ", ")) \(hint)")
        }
        let physical = coPartitioned.map(namespace.physical)
        let listing = physical.map { "\($0)=\(counts[$0] ?? 0)" }
        let distinct = Set(physical.compactMap { counts[$0] })
        guard distinct.count == 1, let count = distinct.first else {
            throw Mismatch(description: "\(worker.rawValue) refuses to start: topics are not co-partitioned: \(listing.joined(separator: ", "))")
        }
        return count
    }

    /// Topics whose partition count differs from `expected`, described for the log and
    /// `/readyz`.
    public func changedCounts(_ counts: [String: Int], expected: Int) -> [String: String] {
        var changed: [String: String] = [:]
        for logical in coPartitioned {
            let name = namespace.physical(logical)
            if let count = counts[name], count != expected {
                changed[name] = "topic \(name): partition count changed from \(expected) to \(count); processing of it stopped (no silent reshuffle: migrate with `fleetctl partitions migrate`)"
            }
        }
        return changed
    }
}
