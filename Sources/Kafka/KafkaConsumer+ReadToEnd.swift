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
        guard !offsets.isEmpty else { return [] }
        var ends: [TopicPartition: Int64] = [:]
        for partition in offsets.keys { ends[partition] = try await queryWatermarks(partition).high }
        try await assign(offsets)
        let progress = ReadProgress(ends: ends, starts: offsets)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in self.batches { progress.append(batch, at: clock.now) }
            }
            while true {
                try await Task.sleep(for: .milliseconds(50))
                let waiting = progress.partitionsWaiting()
                if !waiting.isEmpty {
                    // A position past the end means only control records (or nothing) remain.
                    let positions = (try? self.position(Array(waiting))) ?? [:]
                    progress.markRead(positions)
                }
                if progress.isComplete(now: clock.now, settle: settle) { break }
                if clock.now >= deadline {
                    group.cancelAll()
                    let missing = progress.partitionsWaiting().sorted().map(\.description).joined(separator: ", ")
                    throw KafkaError.timedOut("reading to the end: \(missing.isEmpty ? "still receiving" : missing) after \(timeout)")
                }
            }
            group.cancelAll()
        }
        return progress.messages
    }
}

extension KafkaConsumer {
    /// `readToEnd` with a consumer of its own: `configuration` plus `groupId` (used for nothing
    /// but librdkafka's queues: the consumer only assigns), `read_committed`, closed afterwards
    /// whatever happens.
    public static func readToEnd(
        _ offsets: [TopicPartition: Int64], configuration: KafkaConfiguration, groupId: String,
        settle: Duration = .milliseconds(400), timeout: Duration = .seconds(120)
    ) async throws -> [KafkaMessage] {
        var readerConfiguration = configuration
        readerConfiguration["group.id"] = groupId
        readerConfiguration["enable.partition.eof"] = "false"
        readerConfiguration["isolation.level"] = "read_committed"
        let consumer = try KafkaConsumer(configuration: readerConfiguration)
        do {
            let messages = try await consumer.readToEnd(offsets, settle: settle, timeout: timeout)
            await consumer.close()
            return messages
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
        var messages: [KafkaMessage] = []
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

    func append(_ batch: [KafkaMessage], at instant: ContinuousClock.Instant) {
        state.withLock { state in
            state.messages += batch
            state.lastArrival = instant
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

    var messages: [KafkaMessage] { state.withLock { $0.messages } }
}
