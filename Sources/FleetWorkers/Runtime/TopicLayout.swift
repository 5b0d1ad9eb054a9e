public import FleetModel
public import Kafka

/// The topics one worker reads and owns, and the start-up check that they exist and are
/// co-partitioned (DESIGN.md principle 2).
public struct TopicLayout: Sendable, Hashable {
    public var worker: Worker
    public var namespace: TopicNamespace

    public init(worker: Worker, namespace: TopicNamespace) {
        self.worker = worker
        self.namespace = namespace
    }

    /// Logical names of the topics that must share one partition count: the ingest topic (if
    /// any), the folded log, the changelog and the history.
    public var coPartitioned: [String] {
        [worker.ingestTopic, worker.foldedTopic, worker.stateTopic, worker.historyTopic].compactMap { $0 }
    }

    public var foldedTopic: String { namespace.physical(worker.foldedTopic) }
    public var ingestTopic: String? { worker.ingestTopic.map(namespace.physical) }
    public var stateTopic: String { namespace.physical(worker.stateTopic) }
    public var historyTopic: String { namespace.physical(worker.historyTopic) }

    /// Why a worker refuses to run on the topics it found.
    public struct Mismatch: Error, CustomStringConvertible, Sendable, Hashable {
        public var description: String
    }

    /// The common partition count of `coPartitioned`, given the cluster's counts by physical
    /// name; throws naming every missing topic, or every topic and its count when they differ.
    public func partitionCount(in counts: [String: Int]) throws(Mismatch) -> Int {
        let physical = coPartitioned.map { (logical: $0, physical: namespace.physical($0)) }
        let missing = physical.filter { counts[$0.physical] == nil }.map(\.physical)
        if !missing.isEmpty {
            throw Mismatch(description: "\(worker.rawValue) refuses to start: missing topic(s) \(missing.joined(separator: ", ")) (create them with `fleetctl topics create`)")
        }
        let listing = physical.map { "\($0.physical)=\(counts[$0.physical] ?? 0)" }
        let distinct = Set(physical.compactMap { counts[$0.physical] })
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
