import FleetModel
import FleetWorkers
import Kafka

/// Reads what a replay or an export of one worker's partition needs, through `FleetTopicReader`
/// (no group, no writes, each partition to its end as of the read).
struct RangeReader: Sendable {
    let reader: FleetTopicReader
    let topics: WorkerTopics

    /// One folded partition's range: its resolved offsets and its records.
    struct Read: Sendable {
        var range: ReplayRange
        /// The records of the range, in offset order.
        var rangeLog: [KafkaMessage]

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

    /// The range's ends as offsets, without reading the partition: an offset as given, a time
    /// by offsets-for-times (`FleetTopicReader.offsets(atOrAfter:in:)`, which checks the
    /// brokers' answer and falls back to scanning). nil for the end: the partition's end as of
    /// the read.
    func offsets(partition: Int32, from: ReplayBound, to: ReplayBound?) async throws -> (from: Int64, to: Int64?) {
        let place = TopicPartition(topics.folded, partition)
        func resolve(_ bound: ReplayBound, after earlier: Int64?) async throws -> Int64? {
            switch bound {
            case .offset(let offset): return offset
            case .time(let time):
                return try await reader.offsets(atOrAfter: time, in: [place], scanFrom: earlier.map { [place: $0] } ?? [:])[place]
            }
        }
        let start = try await resolve(from, after: nil) ?? 0
        // A later time's offset is never before an earlier one's: a fallback scan for --to starts at --from.
        let laterTime: Bool = if case .time(let first) = from, case .time(let second)? = to { second >= first } else { false }
        let stop = try await to.asyncMap { try await resolve($0, after: laterTime ? start : nil) } ?? nil
        return (start, stop)
    }

    /// Streams the folded partition from `start` (the beginning when nil) to `stop` (not
    /// included; the end as of the call when nil), handing each record to `body`; returns the
    /// offset after the last record handed (nil when none was).
    func streamLog(partition: Int32, start: Int64?, stop: Int64?, body: (KafkaMessage) throws -> Void) async throws -> Int64? {
        var next: Int64?
        do {
            try await reader.stream([TopicPartition(topics.folded, partition): start ?? KafkaConsumer.beginning]) { message in
                if let stop, message.offset >= stop { throw StopReading() }
                try body(message)
                next = message.offset + 1
            }
        } catch is StopReading {}
        return next
    }

    /// Streams one partition of `topic` from its beginning.
    func stream(_ topic: String, partition: Int32, body: (KafkaMessage) throws -> Void) async throws {
        try await reader.stream([TopicPartition(topic, partition): KafkaConsumer.beginning], body: body)
    }

    /// The range's records and offsets, streamed: only the range is kept.
    func read(scope: FleetReplay.Scope, from: ReplayBound, to: ReplayBound?) async throws -> Read {
        let partition = try await partition(of: scope)
        let bounds = try await offsets(partition: partition, from: from, to: to)
        var rangeLog: [KafkaMessage] = []
        let next = try await streamLog(partition: partition, start: bounds.from, stop: bounds.to) { rangeLog.append($0) }
        let range = try ReplayRange.checked(partition: partition, from: bounds.from, to: bounds.to ?? next ?? bounds.from, given: (from, to))
        return Read(range: range, rangeLog: rangeLog.filter { range.contains($0.offset) })
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

    /// The worker's output and dead-letter topics: only `partition` when they have the folded
    /// topic's partition count (every record is keyed by its user, so a partition's outputs
    /// stay on its number), else every partition.
    ///
    /// Streamed; only the records `keep` accepts are returned (a replay keeps those whose id
    /// stem is one of the range's steps, or whose dead letter names a record of the range).
    func recordedOutputs(partition: Int32, keep: (KafkaMessage) -> Bool) async throws -> [KafkaMessage] {
        let names = topics.outputs + [topics.deadLetter]
        let counts = try await reader.partitionCounts(names + [topics.folded])
        let coPartitioned = names.allSatisfy { counts[$0] == counts[topics.folded] }
        var offsets: [TopicPartition: Int64] = [:]
        for name in names {
            for candidate in 0..<Int32(counts[name] ?? 0) where !coPartitioned || candidate == partition {
                offsets[TopicPartition(name, candidate)] = KafkaConsumer.beginning
            }
        }
        var kept: [KafkaMessage] = []
        try await reader.stream(offsets) { message in if keep(message) { kept.append(message) } }
        return kept.sorted { ($0.topic, $0.partition, $0.offset) < ($1.topic, $1.partition, $1.offset) }
    }
}

/// Ends a stream at the range's end.
struct StopReading: Error {}

extension Optional {
    /// `map` with an async transform.
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}

extension ReplayRange {
    /// The range from resolved offsets; throws when `from` lies after `to` (a mixed pair such
    /// as an offset and a time, or bounds past the partition's end).
    static func checked(partition: Int32, from: Int64, to: Int64, given: (ReplayBound, ReplayBound?)) throws(ReplayError) -> ReplayRange {
        guard from <= to else {
            throw ReplayError("the range is empty: --from (\(given.0)) resolves to offset \(from), after --to (\(given.1.map(String.init(describing:)) ?? "end")) at offset \(to)")
        }
        return ReplayRange(partition: partition, from: from, to: to)
    }
}
