import CRdKafka
public import Logging
import Synchronization

extension KafkaConsumer {
    /// Reads the given partitions from the given offsets up to where each ended when the call
    /// began, and returns the messages in the order received. The consumer must not be iterated
    /// by anyone else meanwhile; it is left assigned to the partitions.
    ///
    /// For read-only tools (`fleetctl explain`, `replay`, `dlq list`) that cannot append a marker
    /// to find the end. The end of a partition is its high watermark at the start, and a partition
    /// counts as read once a message at or past `high - 1` arrived or the consumer's position
    /// reached `high` (the position also moves past transaction control records, which are never
    /// handed out). Then the read goes on until nothing arrives for `settle`: some brokers (the
    /// local test broker) report the high watermark as the start of the last batch + 1, and the
    /// rest of that batch comes in the same fetch, so a short quiet period collects it. A
    /// partition whose start is at or past its high watermark is read for `settle` too, for the
    /// same reason.
    ///
    /// - Parameters:
    ///   - offsets: start offset per partition (`KafkaConsumer.beginning` for the first record).
    ///   - timeout: the whole read's limit; on expiry it throws `KafkaError.timedOut` naming the
    ///     partitions not read to their end.
    public func readToEnd(
        _ offsets: [TopicPartition: Int64], settle: Duration = .milliseconds(400), timeout: Duration = .seconds(120)
    ) async throws -> [KafkaMessage] {
        var messages: [KafkaMessage] = []
        try await readToEnd(offsets, settle: settle, timeout: timeout) { batch in messages += batch }
        return messages
    }

    /// `readToEnd`, handing each batch to `body` as it arrives instead of gathering them:
    /// memory stays bounded by a few batches whatever the partitions hold (`fleetctl` reads
    /// production-size topics in a 1 GiB pod). `body` runs on the calling task, one batch at a
    /// time, in the order received (offset order within each partition); a batch it has not
    /// taken yet holds the reading back (at most `bufferedBatches` wait).
    public func readToEnd(
        _ offsets: [TopicPartition: Int64], settle: Duration = .milliseconds(400), timeout: Duration = .seconds(120),
        bufferedBatches: Int = 4, body: ([KafkaMessage]) async throws -> Void
    ) async throws {
        guard !offsets.isEmpty else { return }
        var ends: [TopicPartition: Int64] = [:]
        // The low watermarks come with the ends: a start at the beginning is the low watermark,
        // a concrete offset (see `assign`), without asking the leader a second time.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var starts = offsets
        for partition in offsets.keys {
            let marks = try await watermarks(of: partition, until: deadline)
            ends[partition] = marks.high
            if starts[partition] == KafkaConsumer.beginning { starts[partition] = marks.low }
        }
        try await assign(starts)
        let progress = ReadProgress(ends: ends, starts: starts)
        let queue = BatchQueue(capacity: max(1, bufferedBatches))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in self.batches {
                    // Backpressure: wait while the caller has not taken what is queued. The
                    // batch counts as arrived now (not when handled), and as pending until
                    // queued, so a slow handler never looks like a quiet partition.
                    progress.received(at: clock.now)
                    queue.holding(true)
                    while !queue.offer(batch) { try await Task.sleep(for: .milliseconds(5)) }
                    queue.holding(false)
                }
            }
            var idle = 0
            while true {
                let taken = queue.take()
                if !taken.isEmpty {
                    idle = 0
                    for batch in taken {
                        try await body(batch)
                        progress.append(batch)
                    }
                } else {
                    idle += 1
                    try await Task.sleep(for: .milliseconds(idle < 10 ? 5 : 50))
                }
                let waiting = progress.partitionsWaiting()
                if !waiting.isEmpty, taken.isEmpty {
                    // A position past the end means only control records (or nothing) remain.
                    let positions = (try? self.position(Array(waiting))) ?? [:]
                    progress.markRead(positions)
                    // Dry for 10 ms (then every half second) with records left: the fetcher
                    // may be parked on a full queue that the reading task has since drained.
                    if idle == 2 || idle % 10 == 0, queue.isEmpty {
                        let left = progress.partitionsWaiting()
                        if !left.isEmpty { await wakeFetchers(Array(left)) }
                    }
                }
                if taken.isEmpty, queue.isEmpty, progress.isComplete(now: clock.now, settle: settle) { break }
                if clock.now >= deadline {
                    group.cancelAll()
                    let missing = progress.partitionsWaiting().sorted().map(\.description).joined(separator: ", ")
                    throw KafkaError.timedOut("reading to the end: \(missing.isEmpty ? "still receiving" : missing) after \(timeout)")
                }
            }
            group.cancelAll()
        }
    }
}

extension KafkaConsumer {
    /// `partition`'s watermarks, asked again (until `deadline`) while this client does not know
    /// the partition: the brokers list a topic created a moment ago (a migration's new
    /// generation) with all its partitions before a new client's metadata does, and the lookup
    /// answers "unknown partition" until it does.
    fileprivate func watermarks(of partition: TopicPartition, until deadline: ContinuousClock.Instant) async throws -> Watermarks {
        while true {
            do {
                return try await queryWatermarks(partition)
            } catch {
                guard error.code == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION.rawValue, ContinuousClock.now < deadline else { throw error }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// Batches the reading task has received and the calling task has not yet handled.
private final class BatchQueue: Sendable {
    private let state: Mutex<[[KafkaMessage]]>
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        state = Mutex([])
    }

    /// Queues `batch` unless `capacity` batches are waiting.
    func offer(_ batch: [KafkaMessage]) -> Bool {
        state.withLock { queued in
            guard queued.count < capacity else { return false }
            queued.append(batch)
            return true
        }
    }

    func take() -> [[KafkaMessage]] { state.withLock { queued in defer { queued = [] }; return queued } }

    /// Whether the reading task holds a batch it has not queued yet.
    func holding(_ value: Bool) { held.withLock { $0 = value } }

    /// Nothing queued and nothing about to be.
    var isEmpty: Bool { state.withLock { $0.isEmpty } && !held.withLock { $0 } }

    private let held = Mutex(false)
}

extension KafkaConsumer {
    /// `readToEnd` with a consumer of its own: `configuration` plus `groupId` (used for nothing
    /// but librdkafka's queues: the consumer only assigns), `read_committed`, closed afterwards
    /// whatever happens.
    public static func readToEnd(
        _ offsets: [TopicPartition: Int64], configuration: KafkaConfiguration, groupId: String,
        settle: Duration = .milliseconds(400), timeout: Duration = .seconds(120), logger: Logger
    ) async throws -> [KafkaMessage] {
        try await withReader(configuration: configuration, groupId: groupId, prefetchKilobytes: nil, logger: logger) { consumer in
            try await consumer.readToEnd(offsets, settle: settle, timeout: timeout)
        }
    }

    /// The streaming `readToEnd` with a consumer of its own, as above.
    public static func readToEnd(
        _ offsets: [TopicPartition: Int64], configuration: KafkaConfiguration, groupId: String,
        settle: Duration = .milliseconds(400), timeout: Duration = .seconds(120), logger: Logger,
        body: ([KafkaMessage]) async throws -> Void
    ) async throws {
        // librdkafka prefetches up to queued.max.messages.kbytes per partition (64 MiB by
        // default): bound it, so a read of many partitions stays small.
        try await withReader(configuration: configuration, groupId: groupId, prefetchKilobytes: "8192", logger: logger) { consumer in
            try await consumer.readToEnd(offsets, settle: settle, timeout: timeout, body: body)
        }
    }

    /// Runs `read` with a reading consumer of its own (see `readToEnd(_:configuration:groupId:)`)
    /// and closes it afterwards whatever happens. `prefetchKilobytes` sets
    /// `queued.max.messages.kbytes` unless `configuration` does.
    private static func withReader<Result>(
        configuration: KafkaConfiguration, groupId: String, prefetchKilobytes: String?, logger: Logger,
        _ read: (KafkaConsumer) async throws -> Result
    ) async throws -> Result {
        var readerConfiguration = configuration
        readerConfiguration["group.id"] = groupId
        readerConfiguration["enable.partition.eof"] = "false"
        readerConfiguration["isolation.level"] = "read_committed"
        if let prefetchKilobytes, readerConfiguration["queued.max.messages.kbytes"] == nil {
            readerConfiguration["queued.max.messages.kbytes"] = prefetchKilobytes
        }
        let consumer = try KafkaConsumer(configuration: readerConfiguration, logger: logger)
        do {
            let result = try await read(consumer)
            await consumer.close()
            return result
        } catch {
            await consumer.close()
            throw error
        }
    }
}

/// What `readToEnd` has received, shared by the reading task and the watching one.
private final class ReadProgress: Sendable {
    private struct State {
        var ends: [TopicPartition: Int64]
        var waiting: Set<TopicPartition>
        var lastArrival: ContinuousClock.Instant?
        var readSince: ContinuousClock.Instant?
    }

    private let state: Mutex<State>

    init(ends: [TopicPartition: Int64], starts: [TopicPartition: Int64]) {
        var waiting = Set<TopicPartition>()
        for (partition, end) in ends {
            let start = starts[partition] ?? 0
            // A start at the end (or a named offset at the beginning of an empty partition)
            // has nothing to wait for but the settle period.
            if end > 0, start < 0 || start < end { waiting.insert(partition) }
        }
        state = Mutex(State(ends: ends, waiting: waiting))
    }

    /// A batch arrived from the consumer.
    func received(at instant: ContinuousClock.Instant) {
        state.withLock { $0.lastArrival = instant }
    }

    /// A batch was handled: its partitions may now be read to their end.
    func append(_ batch: [KafkaMessage]) {
        state.withLock { state in
            for message in batch where message.offset + 1 >= (state.ends[message.topicPartition] ?? 0) {
                state.waiting.remove(message.topicPartition)
            }
        }
    }

    func markRead(_ positions: [TopicPartition: Int64]) {
        state.withLock { state in
            for (partition, position) in positions where position >= (state.ends[partition] ?? 0) {
                state.waiting.remove(partition)
            }
        }
    }

    func partitionsWaiting() -> Set<TopicPartition> { state.withLock { $0.waiting } }

    func isComplete(now: ContinuousClock.Instant, settle: Duration) -> Bool {
        state.withLock { state in
            guard state.waiting.isEmpty else { return false }
            let since = state.readSince ?? now
            state.readSince = since
            let quietSince = max(state.lastArrival ?? since, since)
            return now - quietSince >= settle
        }
    }

}
