import CRdKafka
public import Logging

/// A Kafka consumer, normally in a consumer group (`subscribe`), or on explicit partitions (`assign`).
///
/// Read messages with `for try await message in consumer.messages` (or `consumer.batches` for
/// throughput: one hand-off per batch). Offsets are never committed automatically: commit explicit
/// offsets (the next offset to read, i.e. last processed + 1) with `commit`, or add them to a
/// producer transaction with `groupMetadata()` and `KafkaProducer.sendOffsetsToTransaction`.
///
/// Threading: a dedicated poll thread runs librdkafka's poll and the rebalance callback (see
/// `ConsumerPollLoop`); blocking calls (commit, committed, seek, watermarks) run on their own
/// threads; nothing blocks the Swift concurrency pool.
public final class KafkaConsumer: Sendable {
    /// Properties our consumers set unless the configuration says otherwise.
    public static let defaultProperties: [String: String] = [
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
    ]

    /// Owned by `loop` (freed when the loop goes away, which this object prevents while it exists).
    private let handle: RdKafkaHandle
    private let loop: ConsumerPollLoop

    /// Creates the consumer; it joins its group only on `subscribe`.
    ///
    /// `groupId` is required even for consumers that only `assign` (librdkafka's consumer needs a
    /// group for its queues and for offsets); give such readers their own group name.
    /// - Parameters:
    ///   - maxBatchSize: most messages per batch handed to the application.
    ///   - logger: gets the consumer's lines and librdkafka's own about it.
    public init(configuration: KafkaConfiguration, maxBatchSize: Int = 1000, logger: Logger) throws(KafkaError) {
        guard maxBatchSize > 0 else { throw KafkaError.invalidArgument("maxBatchSize must be positive") }
        guard let groupId = configuration.groupId, !groupId.isEmpty else {
            throw KafkaError.invalidArgument("a consumer needs group.id")
        }
        // Properties only producers read are dropped (see `KafkaProducer.init`).
        let properties = Self.defaultProperties.merging(configuration.forConsumer.properties) { _, given in given }
        let relay = RebalanceRelay(logger: logger)
        let conf = try makeRdKafkaConf(properties, context: relay)
        rd_kafka_conf_set_rebalance_cb(conf) { _, err, partitions, opaque in
            guard let opaque, let partitions else { return }
            Unmanaged<RebalanceRelay>.fromOpaque(opaque).takeUnretainedValue().loop?.handleRebalance(err, partitions)
        }
        let raw = try makeRdKafkaHandle(RD_KAFKA_CONSUMER, conf: conf)
        rd_kafka_poll_set_consumer(raw)
        let handle = RdKafkaHandle(raw: raw)
        let loop = ConsumerPollLoop(handle: handle, relay: relay, logger: logger, maxBatchSize: maxBatchSize)
        relay.loop = loop
        self.handle = handle
        self.loop = loop
        loop.start()
    }

    /// Without an explicit `close`, the poll thread still leaves the group, then the handle is freed.
    deinit {
        loop.requestClose()
    }

    // MARK: Group membership

    /// Joins the consumer group (`group.id` is required) for `topics`.
    ///
    /// - Parameters:
    ///   - pauseNewlyAssigned: pause every partition as soon as it is assigned, so the caller can
    ///     restore its state concurrently and `resume` it when ready.
    ///   - onRebalance: called before each assignment change is applied (see `RebalanceHandler`).
    public func subscribe(topics: [String], pauseNewlyAssigned: Bool = false,
                          onRebalance: RebalanceHandler? = nil) throws(KafkaError) {
        try subscribe(topics: topics, pausingOnAssignment: pauseNewlyAssigned ? Set(topics) : [], onRebalance: onRebalance)
    }

    /// Joins the consumer group for `topics`, pausing newly assigned partitions of the topics in
    /// `pausingOnAssignment` (a stateful stage restores those) while the others (a stateless
    /// stage's) start fetching at once. The pause happens on the poll thread right after the
    /// assignment, before any of their messages can be handed out.
    public func subscribe(topics: [String], pausingOnAssignment: Set<String>,
                          onRebalance: RebalanceHandler? = nil) throws(KafkaError) {
        loop.setRebalanceHandler(onRebalance, pauseTopics: pausingOnAssignment.isEmpty ? nil : pausingOnAssignment)
        let list = rd_kafka_topic_partition_list_new(Int32(clamping: topics.count))!
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for topic in topics {
            rd_kafka_topic_partition_list_add(list, topic, RD_KAFKA_PARTITION_UA)
        }
        try KafkaError.check(rd_kafka_subscribe(handle.raw, list), "subscribe")
    }

    /// Reads exactly these partitions from these offsets, without group balancing (e.g. to restore
    /// state from a changelog). Use `KafkaConsumer.beginning` / `.end` for symbolic positions.
    ///
    /// `beginning` is resolved to the partition's low watermark first, as `seek` does: librdkafka
    /// looks a logical start up with an offset query that a new client sends before it knows the
    /// partition's leader, and retries only after 500 ms, so every read from the beginning
    /// (each `fleetctl` pass over a topic) waited ~550 ms for its first record; from a concrete
    /// offset it gets it in a few milliseconds. `timeout` bounds the watermark lookups; a
    /// partition whose lookup fails starts from the logical beginning, as before.
    public func assign(_ offsets: [TopicPartition: Int64], timeout: Duration = .seconds(10)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("assign") { () throws(KafkaError) in
            let offsets = Self.resolvingBeginning(offsets, handle: handle, deadline: ContinuousClock.now + timeout)
            let list = PartitionList.make(offsets)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            try KafkaError.check(rd_kafka_assign(handle.raw, list), "assign")
        }
    }

    /// Symbolic offset: the first retained record.
    public static let beginning = Int64(RD_KAFKA_OFFSET_BEGINNING)
    /// Symbolic offset: the next record to be written.
    public static let end = Int64(RD_KAFKA_OFFSET_END)

    /// The partitions currently assigned to this consumer.
    public func assignment() throws(KafkaError) -> [TopicPartition] {
        var list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?
        try KafkaError.check(rd_kafka_assignment(handle.raw, &list), "assignment")
        guard let list else { return [] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        return PartitionList.partitions(list).sorted()
    }

    /// This member's current group metadata, for `KafkaProducer.sendOffsetsToTransaction`.
    public func groupMetadata() throws(KafkaError) -> ConsumerGroupMetadata {
        guard let raw = rd_kafka_consumer_group_metadata(handle.raw) else {
            throw KafkaError.invalidArgument("consumer has no group (group.id not set)")
        }
        return ConsumerGroupMetadata(owning: raw)
    }

    // MARK: Reading

    /// Messages one by one. Iterate from one task at a time; ends (nil) after `close` or when the
    /// iterating task is cancelled; throws on a fatal consumer error.
    public var messages: KafkaMessageSequence { KafkaMessageSequence(loop: loop) }

    /// Non-empty batches of messages (at most `maxBatchSize`), in partition order within each
    /// partition. Same rules as `messages`; use one or the other.
    public var batches: KafkaBatchSequence { KafkaBatchSequence(loop: loop) }

    /// Stops fetching these partitions (messages already handed out are unaffected).
    public func pause(_ partitions: [TopicPartition]) throws(KafkaError) {
        let list = PartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try KafkaError.check(rd_kafka_pause_partitions(handle.raw, list), "pause")
        try PartitionList.checkErrors(list)
    }

    /// Resumes fetching paused partitions from their current position.
    public func resume(_ partitions: [TopicPartition]) throws(KafkaError) {
        let list = PartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try KafkaError.check(rd_kafka_resume_partitions(handle.raw, list), "resume")
        try PartitionList.checkErrors(list)
    }

    /// Moves the fetch position of assigned partitions; the next message of each is at `offset`.
    ///
    /// `beginning` is resolved to the partition's low watermark first, so every partition lands
    /// on a concrete offset (one whose lookup fails keeps the logical `beginning`, which
    /// librdkafka resolves itself, later). A logical seek starts an offset query in librdkafka,
    /// and a `resume` while that query is out makes its answer stale; librdkafka then retries it
    /// after a backoff, and the partition fetched nothing for ~500 ms after a seek-and-resume
    /// (the runtime's start on a group with nothing committed). If the low watermark moves on
    /// before the fetch, `auto.offset.reset` (earliest by default) applies as for any lost
    /// position.
    /// `timeout` bounds the whole call: the watermark lookups and the seek.
    public func seek(_ offsets: [TopicPartition: Int64], timeout: Duration = .seconds(10)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("seek") { () throws(KafkaError) in
            let deadline = ContinuousClock.now + timeout
            let offsets = Self.resolvingBeginning(offsets, handle: handle, deadline: deadline)
            let list = PartitionList.make(offsets)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            try KafkaError.check(rd_kafka_seek_partitions(handle.raw, list, milliseconds(remaining(until: deadline, doing: "seek"))))
            try PartitionList.checkErrors(list)
        }
    }

    /// `offsets` with `beginning` replaced by each partition's low watermark (blocks the calling
    /// thread; see `assign` and `seek` for why). A partition whose lookup fails keeps the logical
    /// `beginning`, which librdkafka resolves itself, only later: a client that does not know a
    /// partition yet (a topic created a moment ago, metadata not refreshed) answers "unknown
    /// partition" here but reads it once its metadata catches up, so failing the read for it
    /// would be wrong.
    static func resolvingBeginning(
        _ offsets: [TopicPartition: Int64], handle: RdKafkaHandle, deadline: ContinuousClock.Instant
    ) -> [TopicPartition: Int64] {
        var resolved = offsets
        for (partition, offset) in offsets where offset == KafkaConsumer.beginning {
            guard let timeout = try? remaining(until: deadline, doing: "watermarks"),
                  let marks = try? watermarks(of: partition, handle: handle, timeout: timeout)
            else { continue }
            resolved[partition] = marks.low
        }
        return resolved
    }

    /// Asks the partition leader for its watermarks (blocks the calling thread).
    static func watermarks(of partition: TopicPartition, handle: RdKafkaHandle, timeout: Duration) throws(KafkaError) -> Watermarks {
        var low: Int64 = 0
        var high: Int64 = 0
        try KafkaError.check(rd_kafka_query_watermark_offsets(handle.raw, partition.topic, partition.partition,
                                                              &low, &high, milliseconds(timeout)),
                             "watermarks of \(partition)")
        return Watermarks(low: low, high: high)
    }

    // MARK: Offsets

    /// Commits these offsets for the group and waits for the broker's answer. Each offset is the
    /// next one to read (last processed + 1).
    public func commit(_ offsets: [TopicPartition: Int64]) async throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let handle = handle
        try await runBlocking("commit") { () throws(KafkaError) in
            let list = PartitionList.make(offsets)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            try KafkaError.check(rd_kafka_commit(handle.raw, list, 0), "commit")
            try PartitionList.checkErrors(list)
        }
    }

    /// The group's committed offsets; partitions with nothing committed are absent.
    public func committed(_ partitions: [TopicPartition], timeout: Duration = .seconds(10)) async throws(KafkaError) -> [TopicPartition: Int64] {
        let handle = handle
        return try await runBlocking("committed") { () throws(KafkaError) in
            let list = PartitionList.make(partitions)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            try KafkaError.check(rd_kafka_committed(handle.raw, list, milliseconds(timeout)), "committed")
            return try PartitionList.offsets(list)
        }
    }

    /// The offset of the next message this consumer will hand out per partition (absent when
    /// nothing was consumed yet).
    public func position(_ partitions: [TopicPartition]) throws(KafkaError) -> [TopicPartition: Int64] {
        let list = PartitionList.make(partitions)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try KafkaError.check(rd_kafka_position(handle.raw, list), "position")
        return try PartitionList.offsets(list)
    }

    /// Per partition, the earliest offset whose timestamp is at or after the given one (ms since
    /// epoch); partitions with no such record are absent. (Tansu always answers 0.)
    public func offsets(forTimestamps timestamps: [TopicPartition: Int64], timeout: Duration = .seconds(10)) async throws(KafkaError) -> [TopicPartition: Int64] {
        let handle = handle
        return try await runBlocking("offsets-for-times") { () throws(KafkaError) in
            let list = PartitionList.make(timestamps)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            try KafkaError.check(rd_kafka_offsets_for_times(handle.raw, list, milliseconds(timeout)), "offsets for times")
            return try PartitionList.offsets(list)
        }
    }

    /// Asks the partition leader for the partition's watermarks.
    public func queryWatermarks(_ partition: TopicPartition, timeout: Duration = .seconds(10)) async throws(KafkaError) -> Watermarks {
        let handle = handle
        return try await runBlocking("watermarks") { () throws(KafkaError) in
            try Self.watermarks(of: partition, handle: handle, timeout: timeout)
        }
    }

    /// The watermarks last seen in fetch responses, without a request; nil when none is known yet.
    public func cachedWatermarks(_ partition: TopicPartition) -> Watermarks? {
        var low: Int64 = 0
        var high: Int64 = 0
        let err = rd_kafka_get_watermark_offsets(handle.raw, partition.topic, partition.partition, &low, &high)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 else { return nil }
        return Watermarks(low: max(low, 0), high: high)
    }

    /// Makes the fetchers of `partitions` look at their queues again now, for a reader that
    /// drained its queue while the partitions still hold records.
    ///
    /// librdkafka 2.0 skips a partition whose queue holds `queued.min.messages` records or
    /// `queued.max.messages.kbytes`, and looks at it again only when its leader's broker thread
    /// wakes for something else, else after up to a second (librdkafka #2879; 2.2 added
    /// `fetch.queue.backoff.ms`). Nothing in consuming wakes that thread, so a reader faster
    /// than the fetcher spent most of each second idle: scanning a million ticks took 10 s,
    /// one wait per 100 000 records. A request to the leader wakes its thread, which then finds
    /// the queue drained and fetches. The request is a ListOffsets for the latest offsets (one
    /// per leader, whatever the count of partitions); its answer is dropped, and so is an error
    /// (a failed wake-up only leaves the wait it would have cut short).
    public func wakeFetchers(_ partitions: [TopicPartition], timeout: Duration = .seconds(2)) async {
        guard !partitions.isEmpty else { return }
        let handle = handle
        var latest: [TopicPartition: Int64] = [:]
        for partition in partitions { latest[partition] = Int64(RD_KAFKA_OFFSET_END) }
        _ = try? await runBlocking("wake-fetchers") { [latest] () throws(KafkaError) in
            let list = PartitionList.make(latest)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            _ = rd_kafka_offsets_for_times(handle.raw, list, milliseconds(timeout))
        }
    }

    // MARK: Shutdown

    /// Leaves the group (the rebalance handler sees the final revocation), ends the message
    /// sequences and frees the client. Commit what you processed first.
    public func close() async {
        await loop.close()
    }
}

/// The rebalance callback's way to the poll loop: created before the handle (the callback opaque
/// is fixed at creation) and pointed at the loop before the poll thread starts.
final class RebalanceRelay: ClientContext, @unchecked Sendable {
    /// Written once before the poll thread starts, read only on it afterwards. Weak: the loop
    /// owns the relay.
    weak var loop: ConsumerPollLoop?
}

/// `KafkaConsumer.messages`.
public struct KafkaMessageSequence: AsyncSequence, Sendable {
    public typealias Element = KafkaMessage
    let loop: ConsumerPollLoop

    public struct AsyncIterator: AsyncIteratorProtocol {
        let loop: ConsumerPollLoop
        var batch: [KafkaMessage] = []
        var index = 0

        public mutating func next() async throws -> KafkaMessage? {
            if index == batch.count {
                guard let next = try await loop.nextBatch() else { return nil }
                batch = next
                index = 0
            }
            defer { index += 1 }
            return batch[index]
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(loop: loop) }
}

/// `KafkaConsumer.batches`.
public struct KafkaBatchSequence: AsyncSequence, Sendable {
    public typealias Element = [KafkaMessage]
    let loop: ConsumerPollLoop

    public struct AsyncIterator: AsyncIteratorProtocol {
        let loop: ConsumerPollLoop
        public mutating func next() async throws -> [KafkaMessage]? {
            try await loop.nextBatch()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(loop: loop) }
}
