import CRdKafka
public import Logging
import Synchronization

/// A Kafka producer: idempotent, murmur2-partitioned (like the Java client), optionally
/// transactional (set `transactionalId`).
///
/// Threading: one dedicated thread serves `rd_kafka_poll`, which runs the delivery-report callback;
/// that callback only stores the report and resumes the awaiting `send`. Blocking calls (flush,
/// transaction steps) run on their own threads. Nothing blocks the Swift concurrency pool.
///
/// Typical use:
/// ```swift
/// let producer = try KafkaProducer(configuration: config, logger: logger)
/// let reports = try await producer.send(records)   // all delivered, or throws
/// await producer.close()
/// ```
public final class KafkaProducer: Sendable {
    /// Properties our producers set unless the configuration says otherwise.
    public static let defaultProperties: [String: String] = [
        "partitioner": "murmur2_random",
        "enable.idempotence": "true",
    ]

    private let handle: RdKafkaHandle
    private let pollThread: ServiceThread
    private let context: ProducerContext
    /// Whether `close` began, and how many `send` calls are enqueueing right now: `close` waits for
    /// those to finish so no record is enqueued after the poll thread stopped.
    private let sendGate = Mutex<(closed: Bool, enqueueing: Int)>((false, 0))
    private let isTransactional: Bool

    /// Creates the producer. `configuration` needs `bootstrapServers`; `defaultProperties` fill
    /// in what it does not set.
    /// `logger` gets the producer's lines and librdkafka's own about it.
    public init(configuration: KafkaConfiguration, logger: Logger) throws(KafkaError) {
        // Properties only consumers read are dropped, so one configuration can serve every
        // client of a worker or tool without librdkafka warnings.
        let properties = Self.defaultProperties.merging(configuration.forProducer.properties) { _, given in given }
        let context = ProducerContext(logger: logger)
        let conf = try makeRdKafkaConf(properties, context: context)
        rd_kafka_conf_set_dr_msg_cb(conf) { rk, message, _ in
            guard let message, let opaque = message.pointee._private else { return }
            let error = KafkaProducer.deliveryError(rk, message.pointee.err)
            DeliveryBatch.deliver(opaque: opaque, partition: message.pointee.partition,
                                  offset: message.pointee.offset, error: error)
        }
        rd_kafka_conf_set_error_cb(conf) { _, err, reason, opaque in
            guard let opaque else { return }
            let context = Unmanaged<ProducerContext>.fromOpaque(opaque).takeUnretainedValue()
            let text = reason.map { String(cString: $0) } ?? ""
            context.logger.error("librdkafka producer error", metadata: [
                "code": "\(String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(err))))", "reason": "\(text)",
            ])
        }
        let raw = try makeRdKafkaHandle(RD_KAFKA_PRODUCER, conf: conf)
        let handle = RdKafkaHandle(raw: raw)
        self.handle = handle
        self.context = context
        self.isTransactional = properties["transactional.id"] != nil
        self.pollThread = ServiceThread(name: "kafka-producer-poll") {
            rd_kafka_poll(handle.raw, 100)
            return true
        }
    }

    /// Frees the handle. Without a prior `close`, undelivered records are dropped (no `send` can be
    /// waiting: it would keep the producer alive).
    deinit {
        if !sendGate.withLock({ $0.closed }) {
            pollThread.stopAndWaitBlocking()
            Self.purge(handle)
        }
        rd_kafka_destroy(handle.raw)
    }

    /// A delivery report's error. A record failed (or purged) because the producer hit a fatal
    /// error — e.g. it was fenced — reports that fatal error, so `send` says why.
    fileprivate static func deliveryError(_ rk: OpaquePointer?, _ err: rd_kafka_resp_err_t) -> KafkaError? {
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        if let rk {
            var errstr = [CChar](repeating: 0, count: 512)
            let fatal = rd_kafka_fatal_error(rk, &errstr, errstr.count)
            if fatal != RD_KAFKA_RESP_ERR_NO_ERROR {
                return KafkaError(fatal, detail: errorText(errstr), isFatal: true)
            }
        }
        return KafkaError(err)
    }

    // MARK: Sending

    /// Produces one record and waits for its delivery report.
    /// - Throws: `KafkaError` when librdkafka refuses the record or the broker does not accept it.
    public func send(_ record: ProducerRecord) async throws(KafkaError) -> DeliveryReport {
        try await send([record])[0]
    }

    /// Produces `records` in order and waits until every one has a delivery report — the efficient
    /// way to send a batch: the records are enqueued back to back without suspension and the caller
    /// is resumed once, when the last report arrives.
    ///
    /// - Returns: one report per record, in the order of `records`.
    /// - Throws: the first `KafkaError` (in record order) once all records are settled; records
    ///   without an error were delivered. Cancellation does not interrupt the wait (the records are
    ///   already in flight).
    public func send(_ records: [ProducerRecord]) async throws(KafkaError) -> [DeliveryReport] {
        if records.isEmpty { return [] }
        let batch = try await enqueue([records], count: records.count)
        if let error = batch.firstError() { throw error }
        return records.indices.map { index in
            DeliveryReport(topic: records[index].topic, partition: batch.slots[index].partition, offset: batch.slots[index].offset)
        }
    }

    /// Produces the records of `parts`, one part after the other, and waits until every one is
    /// acknowledged: `send(_:)` of their concatenation, without building it (a copy of every
    /// record) or the reports.
    ///
    /// - Throws: the first `KafkaError` in record order, its `recordIndex` counted across the parts.
    public func send(contentsOf parts: [[ProducerRecord]]) async throws(KafkaError) {
        let count = parts.reduce(0) { $0 + $1.count }
        if count == 0 { return }
        let batch = try await enqueue(parts, count: count)
        if let error = batch.firstError() { throw error }
    }

    /// Enqueues `count` records, `parts` in order, back to back without suspension, and
    /// returns once each has a delivery report in the batch.
    private func enqueue(_ parts: [[ProducerRecord]], count: Int) async throws(KafkaError) -> DeliveryBatch {
        let admitted = sendGate.withLock { gate in
            if gate.closed { return false }
            gate.enqueueing += 1
            return true
        }
        guard admitted else { throw KafkaError.closed("producer") }
        let batch = DeliveryBatch(count: count)
        var first = 0
        for part in parts {
            var position = 0
            while true {
                position = produce(part, from: position, into: batch, firstIndex: first)
                if position == part.count { break }
                // The local queue is full: let the poll thread drain delivery reports, then retry.
                try? await Task.sleep(for: .milliseconds(1))
            }
            first += part.count
        }
        sendGate.withLock { $0.enqueueing -= 1 }
        await batch.waitForAll()
        return batch
    }

    /// Produces `records` from `start` on, in order, until librdkafka's local queue is full, and
    /// returns where it stopped (`records.count` once all are enqueued). `firstIndex` is the
    /// batch index of `records[0]`; a record refused for another reason fails in `batch`.
    ///
    /// Synchronous, apart from `enqueue`'s waiting, so that each record is read through a
    /// pointer: read through the array or a span, even passed `borrowing`, each record was first
    /// copied (a retain and a release of its topic, key, value and headers, for every record
    /// produced; ~1.2 % of a busy delivery worker's samples).
    private func produce(_ records: [ProducerRecord], from start: Int, into batch: DeliveryBatch, firstIndex: Int) -> Int {
        records.withUnsafeBufferPointer { records in
            guard let base = records.baseAddress else { return 0 }
            for position in start..<records.count {
                let index = firstIndex + position
                let err = produce(base + position, opaque: batch.opaque(for: index))
                if err == RD_KAFKA_RESP_ERR__QUEUE_FULL { return position }
                if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    batch.refuse(index, error: KafkaError(
                        err, detail: "produce to \(records[position].topic): \(String(cString: rd_kafka_err2str(err)))"))
                }
            }
            return records.count
        }
    }

    /// The record at `record`, read where it lies.
    private func produce(_ record: UnsafePointer<ProducerRecord>, opaque: UnsafeMutableRawPointer) -> rd_kafka_resp_err_t {
        let headers = HeaderBridge.make(record.pointee.headers)
        let err = Self.produce(
            on: handle.raw, topic: record.pointee.topic, partition: record.pointee.partition ?? -1, key: record.pointee.key,
            value: record.pointee.value, headers: headers, timestamp: record.pointee.timestamp ?? 0, opaque: opaque)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
            rd_kafka_headers_destroy(headers)  // still ours when produce failed
        }
        return err
    }

    /// librdkafka's produce call with a record's parts, each passed on its own: the closures
    /// capture the parts, not the record.
    private static func produce(
        on handle: OpaquePointer, topic: String, partition: Int32, key: [UInt8]?, value: [UInt8]?, headers: OpaquePointer?,
        timestamp: Int64, opaque: UnsafeMutableRawPointer
    ) -> rd_kafka_resp_err_t {
        withOptionalBytes(key) { key in
            withOptionalBytes(value) { value in
                crdk_produce(handle, topic, partition, key.baseAddress, key.count, value.baseAddress, value.count, headers, timestamp, opaque)
            }
        }
    }

    /// Waits until every enqueued record has been delivered (or failed), at most `timeout`.
    public func flush(timeout: Duration = .seconds(30)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("flush") { () throws(KafkaError) in
            try KafkaError.check(rd_kafka_flush(handle.raw, milliseconds(timeout)), "flush")
        }
    }

    /// Flushes (at most `timeout`; not for transactional producers, whose records belong to a
    /// transaction to commit or abort first), fails whatever is still undelivered, and stops the
    /// poll thread. Every pending `send` returns before `close` does; later calls fail.
    /// The handle itself is freed when the producer is deinitialized.
    public func close(timeout: Duration = .seconds(30)) async {
        let first = sendGate.withLock { gate in
            defer { gate.closed = true }
            return !gate.closed
        }
        guard first else { return }
        while sendGate.withLock({ $0.enqueueing }) > 0 {
            try? await Task.sleep(for: .milliseconds(1))
        }
        let handle = handle
        let isTransactional = isTransactional
        _ = try? await runBlocking("close") { () throws(KafkaError) in
            if !isTransactional { _ = rd_kafka_flush(handle.raw, milliseconds(timeout)) }
            Self.purge(handle)
        }
        await pollThread.stop()
    }

    /// Fails every queued or in-flight record and serves their reports (`_PURGE_*` errors), so
    /// every waiting `send` resumes.
    private static func purge(_ handle: RdKafkaHandle) {
        _ = rd_kafka_purge(handle.raw, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        _ = rd_kafka_flush(handle.raw, 1000)
        rd_kafka_poll(handle.raw, 0)
    }

    /// Looks up where these topics' partitions live now, so that the first `send` to each does
    /// not wait for it. librdkafka learns a topic's partitions and leaders only when a record for
    /// it is first enqueued: a metadata request, then connecting to each leader. A process that
    /// sends its first record the moment it matters (an urgent notification after a start)
    /// would otherwise pay that round trip inside the latency.
    /// `timeout` bounds the whole call, not each topic.
    public func prepare(topics: [String], timeout: Duration = .seconds(10)) async throws(KafkaError) {
        guard !topics.isEmpty else { return }
        let handle = handle
        try await runBlocking("prepare-topics") { () throws(KafkaError) in
            let deadline = ContinuousClock.now + timeout
            for topic in topics {
                let left = try remaining(until: deadline, doing: "metadata of \(topic)")
                // The topic object keeps the metadata the request below fills in; librdkafka
                // holds its own reference while the topic is known.
                guard let topicHandle = rd_kafka_topic_new(handle.raw, topic, nil) else {
                    throw KafkaError(rd_kafka_last_error(), detail: "topic \(topic)")
                }
                defer { rd_kafka_topic_destroy(topicHandle) }
                var metadata: UnsafePointer<rd_kafka_metadata>?
                try KafkaError.check(rd_kafka_metadata(handle.raw, 0, topicHandle, &metadata, milliseconds(left)),
                                     "metadata of \(topic)")
                if let metadata { rd_kafka_metadata_destroy(metadata) }
            }
        }
    }

    // MARK: Transactions

    /// Registers the transactional id with the broker and fences older instances using it.
    /// Call once before the first `beginTransaction`.
    public func initTransactions(timeout: Duration = .seconds(30)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("init-transactions") { () throws(KafkaError) in
            try KafkaError.check(rd_kafka_init_transactions(handle.raw, milliseconds(timeout)))
        }
    }

    /// Starts a transaction; records sent afterwards belong to it. Does not block.
    public func beginTransaction() throws(KafkaError) {
        try KafkaError.check(rd_kafka_begin_transaction(handle.raw))
    }

    /// Adds consumed offsets to the current transaction, so they commit (or abort) atomically with
    /// its records. `offsets` are the next offsets to read (last processed + 1); `groupMetadata`
    /// comes from the consumer that read them (`KafkaConsumer.groupMetadata()`).
    public func sendOffsetsToTransaction(_ offsets: [TopicPartition: Int64], groupMetadata: ConsumerGroupMetadata,
                                         timeout: Duration = .seconds(30)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("send-offsets") { () throws(KafkaError) in
            let list = PartitionList.make(offsets)
            defer { rd_kafka_topic_partition_list_destroy(list) }
            try KafkaError.check(rd_kafka_send_offsets_to_transaction(handle.raw, list, groupMetadata.raw, milliseconds(timeout)))
        }
    }

    /// Flushes and commits the current transaction.
    /// On error see `KafkaError.recovery`: retry, abort, or (fatal/fenced) stop.
    public func commitTransaction(timeout: Duration = .seconds(30)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("commit-transaction") { () throws(KafkaError) in
            try KafkaError.check(rd_kafka_commit_transaction(handle.raw, milliseconds(timeout)))
        }
    }

    /// Aborts the current transaction: its records are never shown to `read_committed` readers
    /// and its offsets are not committed.
    public func abortTransaction(timeout: Duration = .seconds(30)) async throws(KafkaError) {
        let handle = handle
        try await runBlocking("abort-transaction") { () throws(KafkaError) in
            try KafkaError.check(rd_kafka_abort_transaction(handle.raw, milliseconds(timeout)))
        }
    }

    /// The producer's fatal error, if one was raised (e.g. fenced); the producer is then unusable.
    public func fatalError() -> KafkaError? {
        var errstr = [CChar](repeating: 0, count: 512)
        let err = rd_kafka_fatal_error(handle.raw, &errstr, errstr.count)
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return nil }
        return KafkaError(err, detail: errorText(errstr), isFatal: true)
    }
}

/// State reachable from librdkafka callbacks through the handle's opaque; lives as long as the producer.
final class ProducerContext: ClientContext, @unchecked Sendable {}

/// Calls `body` with the bytes of `array`, or an empty buffer with a nil base address for `nil`
/// (librdkafka's "null key/value").
/// An empty array gets a non-nil address so it stays an empty (not null) key or value.
func withOptionalBytes<R>(_ array: [UInt8]?, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    guard let array else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    if array.isEmpty {
        return withUnsafeBytes(of: UInt8(0)) { body(UnsafeRawBufferPointer(start: $0.baseAddress, count: 0)) }
    }
    return array.withUnsafeBytes(body)
}
