import CRdKafka
import Dispatch
import Foundation
import Logging

/// The consumer's dedicated poll thread and the hand-off of message batches to Swift tasks.
///
/// Demand-driven: the thread polls librdkafka only while a task waits for the next batch (or to
/// close), exactly like a synchronous `rd_kafka_consumer_poll` loop. So the rebalance callback —
/// which librdkafka runs inside the poll — always happens between two batches handed to the
/// application, never while it is processing one, and no messages sit in a buffer of ours
/// (pause and seek act on librdkafka's own queues).
///
/// Message ownership: `rd_kafka_consume_batch_queue` hands this thread every
/// `rd_kafka_message_t` it returns; `convert` copies what Swift needs and destroys each message
/// right there, exactly once, before the batch leaves the thread. No librdkafka message ever
/// reaches Swift code elsewhere.
final class ConsumerPollLoop: @unchecked Sendable {
    // Guarded by `condition`.
    private var handler: RebalanceHandler?
    /// Topics whose newly assigned partitions are paused at once; nil pauses none.
    private var pauseTopics: Set<String>? = nil
    private var waiter: CheckedContinuation<[KafkaMessage]?, any Error>?
    private var leftover: [KafkaMessage]?
    private var cancelPending = false
    private var closeRequested = false
    private var finished = false
    private var terminalError: KafkaError?
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []
    private let condition = NSCondition()

    // Confined to the poll thread.
    private var revokedDuringPoll: Set<TopicPartition> = []
    private var topicNames: [OpaquePointer: String] = [:]

    let handle: RdKafkaHandle
    private let queue: RdKafkaHandle
    let logger: Logger
    let maxBatchSize: Int

    /// Kept alive as long as the handle, whose callbacks reach this loop through it.
    private let relay: RebalanceRelay

    /// Takes ownership of `handle`, which is freed when the loop is deinitialized — after its
    /// thread ended, and after every `KafkaConsumer` method using the handle has returned.
    init(handle: RdKafkaHandle, relay: RebalanceRelay, logger: Logger, maxBatchSize: Int) {
        self.handle = handle
        self.relay = relay
        // Non-nil because KafkaConsumer requires group.id (the queue belongs to the group).
        self.queue = RdKafkaHandle(raw: rd_kafka_queue_get_consumer(handle.raw)!)
        self.logger = logger
        self.maxBatchSize = maxBatchSize
    }

    deinit {
        rd_kafka_queue_destroy(queue.raw)
        rd_kafka_destroy(handle.raw)
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "kafka-consumer-poll"
        thread.start()
    }

    func setRebalanceHandler(_ handler: RebalanceHandler?, pauseTopics: Set<String>?) {
        condition.withLock {
            self.handler = handler
            self.pauseTopics = pauseTopics
        }
    }

    // MARK: Demand (any task)

    /// The next non-empty batch, or nil once the consumer is closed or the task is cancelled.
    func nextBatch() async throws -> [KafkaMessage]? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[KafkaMessage]?, any Error>) in
                condition.lock()
                defer { condition.unlock() }
                if let error = terminalError { return continuation.resume(throwing: error) }
                if finished || closeRequested || cancelPending || Task.isCancelled {
                    cancelPending = false
                    return continuation.resume(returning: nil)
                }
                if let batch = leftover {
                    leftover = nil
                    return continuation.resume(returning: batch)
                }
                guard waiter == nil else {
                    return continuation.resume(throwing: KafkaError.invalidArgument("a consumer can be iterated by one task at a time"))
                }
                waiter = continuation
                condition.broadcast()
            }
        } onCancel: {
            condition.lock()
            let pending = waiter
            waiter = nil
            if pending == nil { cancelPending = true }
            condition.unlock()
            pending?.resume(returning: nil)
        }
    }

    /// Asks the poll thread to close without waiting (for `KafkaConsumer.deinit`).
    func requestClose() {
        condition.withLock {
            closeRequested = true
            condition.broadcast()
        }
    }

    /// Ends iteration and leaves the group (running the handler for the final revocation).
    /// Returns when that is done.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if finished {
                condition.unlock()
                return continuation.resume()
            }
            closeWaiters.append(continuation)
            closeRequested = true
            condition.broadcast()
            condition.unlock()
        }
    }

    // MARK: Poll thread

    private func run() {
        var buffer = [UnsafeMutablePointer<rd_kafka_message_t>?](repeating: nil, count: maxBatchSize)
        while true {
            condition.lock()
            while waiter == nil && !closeRequested { condition.wait() }
            let closing = closeRequested
            condition.unlock()
            if closing { break }
            if let batch = pollUntilMessages(&buffer) {
                deliver(batch)
            }
        }
        shutDown()
    }

    /// Polls until messages arrive, the waiter goes away or close is requested.
    private func pollUntilMessages(_ buffer: inout [UnsafeMutablePointer<rd_kafka_message_t>?]) -> [KafkaMessage]? {
        while true {
            revokedDuringPoll.removeAll(keepingCapacity: true)
            let count = buffer.withUnsafeMutableBufferPointer { pointers in
                takeAvailable(into: pointers, waitingFor: 100)
            }
            if count < 0 {
                let err = rd_kafka_last_error()
                logger.error("consume failed", metadata: ["error": "\(String(cString: rd_kafka_err2str(err)))"])
            } else if count > 0 {
                let messages = convert(buffer, count: count)
                if !messages.isEmpty { return messages }
            }
            condition.lock()
            let stillWanted = waiter != nil && !closeRequested
            condition.unlock()
            if !stillWanted { return nil }
        }
    }

    /// Fills `buffer` with what the queue holds, waiting up to `timeoutMilliseconds` only while it
    /// holds nothing. librdkafka's batch call waits its whole timeout for the batch to *fill*:
    /// at a moderate rate every record waited for it (the security-latency benchmark saw
    /// deliveries in 250–300 ms waves). So: what is there now; else the first record to arrive,
    /// and what arrived with it. A negative count is librdkafka's error (`rd_kafka_last_error`).
    private func takeAvailable(
        into pointers: UnsafeMutableBufferPointer<UnsafeMutablePointer<rd_kafka_message_t>?>, waitingFor timeoutMilliseconds: Int32
    ) -> Int {
        guard let base = pointers.baseAddress, pointers.count > 0 else { return 0 }
        let ready = rd_kafka_consume_batch_queue(queue.raw, 0, base, pointers.count)
        if ready != 0 { return ready }
        guard let first = rd_kafka_consume_queue(queue.raw, timeoutMilliseconds) else { return 0 }
        base[0] = first
        guard pointers.count > 1 else { return 1 }
        let more = rd_kafka_consume_batch_queue(queue.raw, 0, base + 1, pointers.count - 1)
        return 1 + max(0, more)
    }

    /// Copies and destroys the first `count` messages of `buffer` (see the type's doc comment).
    ///
    /// A batch's messages come in runs of one topic, so the last handle's name is reused without
    /// a lookup (`topicName`, ~0.6 % of a busy delivery worker's samples). That needs no check:
    /// every message of the batch is alive when this starts and keeps its topic alive (through
    /// its partition) until destroyed here, so within a batch one address is one topic.
    private func convert(_ buffer: [UnsafeMutablePointer<rd_kafka_message_t>?], count: Int) -> [KafkaMessage] {
        var messages: [KafkaMessage] = []
        messages.reserveCapacity(count)
        var last: (handle: OpaquePointer, name: String)?
        for index in 0..<count {
            guard let message = buffer[index] else { continue }
            defer { rd_kafka_message_destroy(message) }
            let m = message.pointee
            if m.err != RD_KAFKA_RESP_ERR_NO_ERROR {
                handleMessageError(message)
                continue
            }
            guard let rkt = m.rkt else { continue }
            let topic: String
            if let last, last.handle == rkt {
                topic = last.name
            } else {
                topic = topicName(rkt)
                last = (rkt, topic)
            }
            if !revokedDuringPoll.isEmpty, revokedDuringPoll.contains(TopicPartition(topic, m.partition)) {
                continue  // fetched before a revocation handled in this same poll: no longer ours
            }
            var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
            let timestamp = rd_kafka_message_timestamp(message, &timestampType)
            messages.append(KafkaMessage(
                topic: topic,
                partition: m.partition,
                offset: m.offset,
                key: m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) },
                value: m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) },
                headers: HeaderBridge.read(message),
                timestamp: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp,
                timestampType: timestampType == RD_KAFKA_TIMESTAMP_CREATE_TIME ? .createTime
                    : timestampType == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME ? .logAppendTime : nil))
        }
        return messages
    }

    /// Topic names by handle; a handle's name is checked (`strcmp`, once per message) so a
    /// recycled address cannot alias. Comparing through `String.utf8` cost ~1 % of a busy
    /// worker's CPU.
    private func topicName(_ rkt: OpaquePointer) -> String {
        let cName = rd_kafka_topic_name(rkt)!
        if let cached = topicNames[rkt], cached.withCString({ strcmp($0, cName) == 0 }) {
            return cached
        }
        let name = String(cString: cName)
        topicNames[rkt] = name
        return name
    }

    private func handleMessageError(_ message: UnsafeMutablePointer<rd_kafka_message_t>) {
        let err = message.pointee.err
        if err == RD_KAFKA_RESP_ERR__PARTITION_EOF { return }
        let detail = String(cString: rd_kafka_message_errstr(message))
        var errstr = [CChar](repeating: 0, count: 512)
        let fatal = err == RD_KAFKA_RESP_ERR__FATAL
        if fatal {
            let underlying = rd_kafka_fatal_error(handle.raw, &errstr, errstr.count)
            let error = KafkaError(underlying, detail: errorText(errstr), isFatal: true)
            logger.critical("consumer fatal error", metadata: ["error": "\(error)"])
            condition.withLock { terminalError = error }
        } else {
            logger.warning("consumer error", metadata: [
                "error": "\(String(cString: rd_kafka_err2name(err)))", "detail": "\(detail)",
            ])
        }
    }

    private func deliver(_ batch: [KafkaMessage]) {
        condition.lock()
        let target = waiter
        waiter = nil
        if target == nil {
            // The waiter was cancelled after librdkafka handed us the batch: keep it for the next one.
            leftover = batch
        }
        condition.unlock()
        target?.resume(returning: batch)
    }

    private func shutDown() {
        // Serves the final revocation through the rebalance callback on this thread.
        let closeError = rd_kafka_consumer_close(handle.raw)
        if closeError != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.warning("consumer close", metadata: ["error": "\(String(cString: rd_kafka_err2str(closeError)))"])
        }
        condition.lock()
        finished = true
        let pending = waiter
        waiter = nil
        let closers = closeWaiters
        closeWaiters = []
        condition.unlock()
        pending?.resume(returning: nil)
        for closer in closers { closer.resume() }
    }

    // MARK: Rebalance (poll thread, inside librdkafka's poll)

    func handleRebalance(_ err: rd_kafka_resp_err_t, _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) {
        let cooperative = String(cString: rd_kafka_rebalance_protocol(handle.raw)) == "COOPERATIVE"
        let partitions = PartitionList.partitions(list)
        let proto: RebalanceEvent.RebalanceProtocol = cooperative ? .cooperative : .eager
        let (handler, pauseTopics) = condition.withLock { (self.handler, self.pauseTopics) }
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            runHandler(handler, RebalanceEvent(kind: .assigned, partitions: partitions, rebalanceProtocol: proto))
            if cooperative {
                logIfError(rd_kafka_incremental_assign(handle.raw, list), "incremental assign")
            } else {
                logIfError(rd_kafka_assign(handle.raw, list), "assign")
            }
            let toPause = partitions.filter { pauseTopics?.contains($0.topic) ?? false }
            if !toPause.isEmpty {
                let pauseList = PartitionList.make(toPause)
                logIfError(rd_kafka_pause_partitions(handle.raw, pauseList), "pause on assign")
                rd_kafka_topic_partition_list_destroy(pauseList)
            }
            revokedDuringPoll.subtract(partitions)
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            let lost = rd_kafka_assignment_lost(handle.raw) != 0
            revokedDuringPoll.formUnion(partitions)
            runHandler(handler, RebalanceEvent(kind: lost ? .lost : .revoked, partitions: partitions, rebalanceProtocol: proto))
            if cooperative {
                logIfError(rd_kafka_incremental_unassign(handle.raw, list), "incremental unassign")
            } else {
                logIfError(rd_kafka_assign(handle.raw, nil), "unassign")
            }
        default:
            logger.error("rebalance error", metadata: ["error": "\(String(cString: rd_kafka_err2str(err)))"])
            if cooperative {
                logIfError(rd_kafka_incremental_unassign(handle.raw, list), "incremental unassign")
            } else {
                logIfError(rd_kafka_assign(handle.raw, nil), "unassign")
            }
        }
    }

    /// Runs the async handler on the concurrency pool and blocks this (dedicated) thread until it returns.
    private func runHandler(_ handler: RebalanceHandler?, _ event: RebalanceEvent) {
        guard let handler else { return }
        let done = DispatchSemaphore(value: 0)
        Task {
            await handler(event)
            done.signal()
        }
        done.wait()
    }

    private func logIfError(_ err: rd_kafka_resp_err_t, _ what: String) {
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            logger.error("\(what) failed", metadata: ["error": "\(String(cString: rd_kafka_err2str(err)))"])
        }
    }

    private func logIfError(_ error: OpaquePointer?, _ what: String) {
        if let error {
            logger.error("\(what) failed", metadata: ["error": "\(KafkaError(consuming: error))"])
        }
    }
}
