import FleetModel
import FleetWorkers
import Kafka

/// Reads what a replay or an export of one worker's partition needs, through `FleetTopicReader`
/// (no group, no writes, each partition to its end as of the read).
struct RangeReader: Sendable {
    let reader: FleetTopicReader
    let topics: WorkerTopics

    /// One folded partition, the resolved range, and (when asked) its history and state records.
    struct Read: Sendable {
        var range: ReplayRange
        /// The whole folded partition as read, in offset order.
        var log: [KafkaMessage]
        var history: [KafkaMessage] = []
        var changelog: [KafkaMessage] = []

        /// The records of the range.
        var rangeLog: [KafkaMessage] { log.filter { range.contains($0.offset) } }

        /// The notification type of every intent in the range, by intent id.
        var intentTypes: [String: String] {
            var types: [String: String] = [:]
            for message in rangeLog {
                if let value = message.value, case .intent(let intent)? = try? RecordCodec.decode(value) {
                    types[intent.id] = intent.notification
                }
            }
            return types
        }
    }

    func partitionCount() async throws -> Int {
        let counts = try await reader.partitionCounts([topics.folded])
        return counts[topics.folded] ?? 0
    }

    /// The partition `scope` names, checked against the folded topic's partition count.
    func partition(of scope: FleetReplay.Scope) async throws -> Int32 {
        let count = try await partitionCount()
        switch scope {
        case .partition(let partition):
            guard partition >= 0, Int(partition) < count else {
                throw ReplayError("\(topics.folded) has \(count) partitions; there is no partition \(partition)")
            }
            return partition
        case .user(let user):
            return KeyPartitioner.partition(forKey: user, partitions: count)
        }
    }

    func read(scope: FleetReplay.Scope, from: ReplayBound, to: ReplayBound?, withChangelogs: Bool) async throws -> Read {
        let partition = try await partition(of: scope)
        let wanted = withChangelogs ? [topics.folded, topics.history, topics.state] : [topics.folded]
        let messages = try await reader.read(wanted, partitions: [partition])
        let log = messages.filter { $0.topic == topics.folded }
        let end = (log.last?.offset).map { $0 + 1 } ?? 0
        let range = try ReplayRange.resolve(
            partition: partition, from: from, to: to,
            records: log.map { ($0.offset, $0.timestamp.map(Timestamp.init(millisecondsSinceEpoch:))) }, end: end)
        var read = Read(range: range, log: log)
        if withChangelogs {
            // A migrated generation's history starts with copies of the previous one's (header
            // `fleet-copied-from`), whose input offsets are the previous log's: not this log's.
            read.history = messages.filter {
                $0.topic == topics.history && $0.header(StateRekeying.copiedFromHeader) == nil
            }
            read.changelog = messages.filter { $0.topic == topics.state }
        }
        return read
    }

    /// The worker's output and dead-letter topics: only `partition` when they have the folded
    /// topic's partition count (every record is keyed by its user, so a partition's outputs
    /// stay on its number), else every partition.
    func recordedOutputs(partition: Int32) async throws -> [KafkaMessage] {
        let names = topics.outputs + [topics.deadLetter]
        let counts = try await reader.partitionCounts(names + [topics.folded])
        let coPartitioned = names.allSatisfy { counts[$0] == counts[topics.folded] }
        return try await reader.read(names, partitions: coPartitioned ? [partition] : nil)
    }
}
