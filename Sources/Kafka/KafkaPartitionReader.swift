import CRdKafka
import Foundation
public import Logging
import Synchronization

/// One record as librdkafka holds it, lent to the closure of `KafkaPartitionReader.read`.
///
/// Its buffers are librdkafka's own: they are valid only during the call it is passed to, and
/// must not be kept (copy what you need, e.g. with `Array(view.value ?? [])` or `message(topic:)`).
/// That is what makes the bulk path cheap: no record is copied unless the caller copies it.
public struct KafkaRecordView {
    public let partition: Int32
    public let offset: Int64
    /// The key's bytes; nil for a record without a key.
    public let key: UnsafeRawBufferPointer?
    /// The value's bytes; nil for a record without a value (a tombstone).
    public let value: UnsafeRawBufferPointer?
    private let message: UnsafeMutablePointer<rd_kafka_message_t>

    init(_ message: UnsafeMutablePointer<rd_kafka_message_t>) {
        let m = message.pointee
        self.message = message
        partition = m.partition
        offset = m.offset
        key = m.key.map { UnsafeRawBufferPointer(start: $0, count: m.key_len) }
        value = m.payload.map { UnsafeRawBufferPointer(start: $0, count: m.len) }
    }

    /// The value of the last header named `name` (librdkafka's `rd_kafka_header_get_last`);
    /// nil when there is no such header or its value is null.
    public func header(_ name: String) -> UnsafeRawBufferPointer? {
        var headers: OpaquePointer?
        guard rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR, let headers else { return nil }
        var bytes: UnsafeRawPointer?
        var size = 0
        guard rd_kafka_header_get_last(headers, name, &bytes, &size) == RD_KAFKA_RESP_ERR_NO_ERROR, let bytes else { return nil }
        return UnsafeRawBufferPointer(start: bytes, count: size)
    }

    /// A copy of the whole record (key, value, headers, timestamp), for the rare record a bulk
    /// reader hands to code written for `KafkaMessage`.
    public func message(topic: String) -> KafkaMessage {
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)
        return KafkaMessage(
            topic: topic, partition: partition, offset: offset, key: key.map { Array($0) }, value: value.map { Array($0) },
            headers: HeaderBridge.read(message),
            timestamp: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp,
            timestampType: timestampType == RD_KAFKA_TIMESTAMP_CREATE_TIME ? .createTime
                : timestampType == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME ? .logAppendTime : nil)
    }
}

/// Reads one partition from an offset up to a record known to exist, as fast as the broker
/// serves it: for bulk reads such as restoring state from a changelog.
///
/// Unlike `KafkaConsumer`, it builds no `KafkaMessage`: each record is lent to the caller's
/// closure as a `KafkaRecordView` over librdkafka's buffers and destroyed right after. The
/// consumer is its own (assign only, never in a group), and a dedicated thread runs
/// `rd_kafka_consume_batch_queue` and the closure, so neither blocks the Swift concurrency pool.
/// Readers of different partitions run on their own threads and clients, so partitions are read
/// concurrently; each reader prefetches at most `queued.max.messages.kbytes`.
public enum KafkaPartitionReader {
    /// librdkafka settings for bulk reading, used unless the configuration sets them.
    ///
    /// A whole partition is read at once, so fetches are large (librdkafka's 1 MiB a partition
    /// makes a million-record read wait on round trips); prefetching is bounded by bytes
    /// (`KafkaConfiguration.byteBoundedPrefetch`: the reader's memory), not by librdkafka's
    /// default of 100 000 queued messages, which small records reach long before the byte
    /// bound; offsets are never stored (the reader commits nothing).
    public static let bulkProperties: [String: String] = KafkaConfiguration.byteBoundedPrefetch.merging([
        "max.partition.fetch.bytes": "16777216",
        "fetch.max.bytes": "33554432",
        "enable.auto.commit": "false",
        "enable.auto.offset.store": "false",
        "enable.partition.eof": "false",
    ]) { _, new in new }

    /// Hands every record of `partition` from `start` (an offset, or `KafkaConsumer.beginning`)
    /// below `end` to `body`, in offset order, and returns the accumulator once a record at or
    /// past `end` arrived. `end` must be the offset of a record that exists (e.g. a marker the
    /// caller appended): the read waits for it, up to `timeout`.
    ///
    /// `body` runs on the reader's thread, one record at a time, with the accumulator it owns
    /// meanwhile; it must not block. An error it throws ends the read and is rethrown. The read
    /// also ends, throwing `CancellationError`, when the calling task is cancelled.
    ///
    /// - Parameter configuration: the client's settings (brokers, security, `group.id`, which
    ///   librdkafka's assign needs but which is never joined); `bulkProperties` fill the rest.
    public static func read<Accumulator: Sendable>(
        _ partition: TopicPartition, from start: Int64, until end: Int64, configuration: KafkaConfiguration,
        timeout: Duration, logger: Logger, into accumulator: Accumulator,
        _ body: @escaping @Sendable (inout Accumulator, KafkaRecordView) throws -> Void
    ) async throws -> Accumulator {
        guard let groupId = configuration.groupId, !groupId.isEmpty else {
            throw KafkaError.invalidArgument("a partition reader needs group.id (librdkafka's assign requires one)")
        }
        var properties = KafkaConsumer.defaultProperties.merging(configuration.forConsumer.properties) { _, given in given }
        for (name, value) in bulkProperties where configuration[name] == nil { properties[name] = value }
        let context = ClientContext(logger: logger)
        let conf = try makeRdKafkaConf(properties, context: context)
        let handle = RdKafkaHandle(raw: try makeRdKafkaHandle(RD_KAFKA_CONSUMER, conf: conf))
        rd_kafka_poll_set_consumer(handle.raw)
        let read = BulkRead(
            handle: handle, partition: partition, start: start, end: end, deadline: ContinuousClock.now.advanced(by: timeout),
            timeout: timeout, context: context)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Accumulator, any Error>) in
                let thread = Thread {
                    var owned = accumulator
                    let result = Result { () throws -> Accumulator in
                        try read.run { view in try body(&owned, view) }
                        return owned
                    }
                    read.close()
                    continuation.resume(with: result)
                }
                thread.name = "kafka-partition-reader"
                thread.start()
            }
        } onCancel: {
            read.stop.withLock { $0 = true }
        }
    }
}

/// One `KafkaPartitionReader.read`: its client, used only on the reader's thread.
private final class BulkRead: Sendable {
    let handle: RdKafkaHandle
    let partition: TopicPartition
    let start: Int64
    let end: Int64
    let deadline: ContinuousClock.Instant
    let timeout: Duration
    /// The handle's opaque: the read's logger, for librdkafka's lines too; outlives the handle.
    let context: ClientContext
    var logger: Logger { context.logger }
    /// Set when the calling task is cancelled.
    let stop = Mutex(false)

    init(handle: RdKafkaHandle, partition: TopicPartition, start: Int64, end: Int64, deadline: ContinuousClock.Instant,
         timeout: Duration, context: ClientContext) {
        self.handle = handle
        self.partition = partition
        self.start = start
        self.end = end
        self.deadline = deadline
        self.timeout = timeout
        self.context = context
    }

    /// Most messages taken from librdkafka at once.
    private static let batchSize = 8_192

    /// Assigns the partition and consumes until a record at or past `end` (see `read`).
    /// Every message `rd_kafka_consume_batch_queue` returns is destroyed here, exactly once,
    /// after `body` saw it.
    func run(_ body: (KafkaRecordView) throws -> Void) throws {
        // A concrete start: a logical one waited ~550 ms for its first record (see
        // `KafkaConsumer.assign`), at every restore of every partition.
        let starts = KafkaConsumer.resolvingBeginning([partition: start], handle: handle, deadline: deadline)
        let list = PartitionList.make(starts)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        try KafkaError.check(rd_kafka_assign(handle.raw, list), "assign \(partition)")
        guard let queue = rd_kafka_queue_get_consumer(handle.raw) else {
            throw KafkaError.invalidArgument("the reader of \(partition) has no consumer queue")
        }
        defer { rd_kafka_queue_destroy(queue) }
        var buffer = [UnsafeMutablePointer<rd_kafka_message_t>?](repeating: nil, count: Self.batchSize)
        while true {
            if stop.withLock({ $0 }) { throw CancellationError() }
            if ContinuousClock.now >= deadline {
                throw KafkaError.timedOut("reading \(partition) up to offset \(end) took more than \(timeout)")
            }
            let count = buffer.withUnsafeMutableBufferPointer { pointers in
                rd_kafka_consume_batch_queue(queue, 100, pointers.baseAddress, pointers.count)
            }
            guard count > 0 else {
                if count < 0 { logger.warning("consume failed", metadata: ["partition": "\(partition)", "error": "\(KafkaError(rd_kafka_last_error()))"]) }
                continue
            }
            var reachedEnd = false
            var failure: (any Error)?
            for index in 0..<count {
                guard let message = buffer[index] else { continue }
                defer { rd_kafka_message_destroy(message) }
                guard !reachedEnd, failure == nil else { continue }
                if message.pointee.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    failure = handleError(message)
                    continue
                }
                let view = KafkaRecordView(message)
                if view.offset >= end {
                    reachedEnd = true
                    continue
                }
                do { try body(view) } catch { failure = error }
            }
            if let failure { throw failure }
            if reachedEnd { return }
        }
    }

    /// A fatal error ends the read; others (a broker connection lost meanwhile) are retried by
    /// librdkafka and logged.
    private func handleError(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> KafkaError? {
        let err = message.pointee.err
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return nil }
        let detail = String(cString: rd_kafka_message_errstr(message))
        if err == RD_KAFKA_RESP_ERR__FATAL {
            var errstr = [CChar](repeating: 0, count: 512)
            let underlying = rd_kafka_fatal_error(handle.raw, &errstr, errstr.count)
            return KafkaError(underlying, detail: errorText(errstr), isFatal: true)
        }
        logger.warning("partition reader error", metadata: [
            "partition": "\(partition)", "error": "\(String(cString: rd_kafka_err2name(err)))", "detail": "\(detail)",
        ])
        return nil
    }

    /// Closes and frees the client (on the reader's thread: both calls block).
    func close() {
        let closeError = rd_kafka_consumer_close(handle.raw)
        if closeError != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("partition reader close", metadata: ["error": "\(String(cString: rd_kafka_err2str(closeError)))"])
        }
        rd_kafka_destroy(handle.raw)
    }
}
