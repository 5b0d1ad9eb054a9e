public import FleetWorkers
public import Kafka
import Synchronization

/// A producer of an `InMemoryLog`, as the runtime's `LogProducer`: plain (each record visible
/// once acknowledged) or transactional (records visible, and offsets committed, when the
/// transaction commits).
public final class InMemoryProducer: LogProducer {
    let log: InMemoryLog
    let instance: String
    let transactional: Bool
    /// Restore markers and cuts: counted as such in the instance's steps.
    let isMarkerProducer: Bool
    private let transaction = Mutex<Int?>(nil)
    private let initialized = Mutex(false)

    init(log: InMemoryLog, instance: String, transactional: Bool, isMarkerProducer: Bool) {
        self.log = log
        self.instance = instance
        self.transactional = transactional
        self.isMarkerProducer = isMarkerProducer
    }

    public func send(_ records: [ProducerRecord]) async throws(KafkaError) -> [DeliveryReport] {
        if records.isEmpty { return [] }
        let step = InMemoryLog.Step.send(records: records.count, marker: isMarkerProducer)
        let crashesAfter = try log.step(step, instance: instance)
        let open = transaction.withLock { $0 }
        if transactional && open == nil {
            throw KafkaError(code: -172, name: "_STATE", message: "send outside a transaction on a transactional producer")
        }
        let reports = try log.state.withLock { state throws(KafkaError) in
            try InMemoryLog.append(records, transaction: open, in: &state)
        }
        if crashesAfter { throw log.crashAfter(step, instance: instance) }
        return reports
    }

    public func send(contentsOf parts: [[ProducerRecord]]) async throws(KafkaError) {
        _ = try await send(Array(parts.joined()))
    }

    public func flush(timeout: Duration) async throws(KafkaError) {
        try log.checkAlive(instance)
    }

    /// Nothing to look up in memory; a crashed instance still cannot use it.
    public func prepare(topics: [String], timeout: Duration) async throws(KafkaError) {
        try log.checkAlive(instance)
    }

    public func initTransactions(timeout: Duration) async throws(KafkaError) {
        try log.checkAlive(instance)
        initialized.withLock { $0 = true }
    }

    public func beginTransaction() throws(KafkaError) {
        guard transactional, initialized.withLock({ $0 }) else {
            throw KafkaError(code: -172, name: "_STATE", message: "beginTransaction before initTransactions")
        }
        let crashesAfter = try log.step(.beginTransaction, instance: instance)
        let id = log.state.withLock { state in InMemoryLog.begin(instance: instance, in: &state) }
        transaction.withLock { $0 = id }
        if crashesAfter { throw log.crashAfter(.beginTransaction, instance: instance) }
    }

    public func sendOffsetsToTransaction(
        _ offsets: [TopicPartition: Int64], membership: LogGroupMembership
    ) async throws(KafkaError) {
        guard case .member(_, let member, let generation) = membership else {
            throw KafkaError(code: -186, name: "_INVALID_ARG", message: "an in-memory transaction needs an in-memory member")
        }
        guard let id = transaction.withLock({ $0 }) else {
            throw KafkaError(code: -172, name: "_STATE", message: "sendOffsetsToTransaction outside a transaction")
        }
        let crashesAfter = try log.step(.sendOffsetsToTransaction, instance: instance)
        try log.state.withLock { state throws(KafkaError) in
            try InMemoryLog.checkGeneration(member: member, generation: generation, in: state)
            state.transactions[id]?.offsets.merge(offsets) { _, new in new }
        }
        if crashesAfter { throw log.crashAfter(.sendOffsetsToTransaction, instance: instance) }
    }

    public func commitTransaction(timeout: Duration) async throws(KafkaError) {
        try end(.committed, step: .commitTransaction)
    }

    public func abortTransaction(timeout: Duration) async throws(KafkaError) {
        try end(.aborted, step: .abortTransaction)
    }

    private func end(_ status: InMemoryLog.TransactionStatus, step: InMemoryLog.Step) throws(KafkaError) {
        guard let id = transaction.withLock({ $0 }) else {
            throw KafkaError(code: -172, name: "_STATE", message: "\(step) outside a transaction")
        }
        let crashesAfter = try log.step(step, instance: instance)
        log.state.withLock { state in InMemoryLog.end(id, status: status, in: &state) }
        transaction.withLock { $0 = nil }
        if crashesAfter { throw log.crashAfter(step, instance: instance) }
    }

    public func close(timeout: Duration) async {}
}
