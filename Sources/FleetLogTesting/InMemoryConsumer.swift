public import FleetWorkers
public import Kafka
import Synchronization

/// A member of an `InMemoryLog`'s group, as the runtime's `LogConsumer`.
///
/// Rebalance events are handed to the handler from the polling task (`recordBatches`), before
/// any record, as librdkafka's poll thread does: a revocation is awaited before the partitions
/// leave, an assignment's partitions are in place (at the committed offsets, the pausing topics'
/// ones paused) before its handler runs and before any of their records is handed out.
public final class InMemoryConsumer: LogConsumer {
    let log: InMemoryLog
    let instance: String
    let memberId: String
    let maxBatchSize: Int
    private let handler = Mutex<RebalanceHandler?>(nil)
    private let closed = Mutex(false)

    init(log: InMemoryLog, instance: String, maxBatchSize: Int) {
        self.log = log
        self.instance = instance
        self.maxBatchSize = maxBatchSize
        memberId = log.state.withLock { state in
            defer { state.nextMember += 1 }
            return "\(instance)-member-\(state.nextMember)"
        }
    }

    public func subscribe(topics: [String], pausingOnAssignment: Set<String>, onRebalance: RebalanceHandler?) throws(KafkaError) {
        try log.checkAlive(instance)
        handler.withLock { $0 = onRebalance }
        let generation = log.state.withLock { $0.generation }
        log.state.withLock { state in
            state.members[memberId] = InMemoryLog.Member(
                id: memberId, instance: instance, topics: topics, pausingOnAssignment: pausingOnAssignment, generation: generation)
            InMemoryLog.rebalance(in: &state)
        }
    }

    public var recordBatches: any AsyncSequence<[KafkaMessage], any Error> & Sendable { Batches(consumer: self) }

    /// What one poll does: the next rebalance event, else the next batch of records.
    enum Poll {
        case event(RebalanceEvent)
        case records([KafkaMessage])
        case ended
    }

    func poll() -> Poll {
        log.state.withLock { state in
            if state.dead.contains(instance) || closed.withLock({ $0 }) { return .ended }
            guard var member = state.members[memberId] else { return .records([]) }
            if !member.events.isEmpty {
                let event = member.events.removeFirst()
                state.members[memberId] = member
                if event.kind == .assigned { InMemoryLog.applyAssignment(event.partitions, member: memberId, in: &state) }
                return .event(event)
            }
            // A member whose session expired fetches nothing until it has heard `lost`.
            guard member.rejoining == nil else { return .records([]) }
            var batch: [KafkaMessage] = []
            for partition in member.assignment where !member.paused.contains(partition) && batch.count < maxBatchSize {
                let read = InMemoryLog.visible(
                    partition, from: member.positions[partition] ?? 0, limit: maxBatchSize - batch.count, in: state)
                batch += read.messages
                member.positions[partition] = read.next
            }
            state.members[memberId] = member
            return .records(batch)
        }
    }

    /// The handler finished with `event`: a revocation applies now, a lost member joins again.
    func handled(_ event: RebalanceEvent) {
        log.state.withLock { state in
            switch event.kind {
            case .revoked: InMemoryLog.revoked(member: memberId, in: &state)
            case .lost: InMemoryLog.rejoin(member: memberId, in: &state)
            case .assigned: break
            }
        }
    }

    struct Batches: AsyncSequence, Sendable {
        typealias Element = [KafkaMessage]
        let consumer: InMemoryConsumer

        struct AsyncIterator: AsyncIteratorProtocol {
            let consumer: InMemoryConsumer

            mutating func next() async throws -> [KafkaMessage]? {
                while !Task.isCancelled {
                    switch consumer.poll() {
                    case .ended:
                        return nil
                    case .event(let event):
                        if let handler = consumer.handler.withLock({ $0 }) { await handler(event) }
                        consumer.handled(event)
                    case .records(let batch):
                        if !batch.isEmpty { return batch }
                        // Nothing to hand out: wait a little for producers (only when, never what).
                        try? await Task.sleep(for: .milliseconds(1))
                    }
                }
                return nil
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }
    }

    public func membership() throws(KafkaError) -> LogGroupMembership {
        try log.checkAlive(instance)
        let generation = log.state.withLock { $0.members[memberId]?.generation ?? -1 }
        return .member(group: log.group, member: memberId, generation: generation)
    }

    public func pause(_ partitions: [TopicPartition]) throws(KafkaError) {
        try log.checkAlive(instance)
        log.state.withLock { state in
            for partition in partitions where state.members[memberId]?.assignment.contains(partition) == true {
                state.members[memberId]?.paused.insert(partition)
                state.pauses[instance, default: 0] += 1
            }
        }
    }

    public func resume(_ partitions: [TopicPartition]) throws(KafkaError) {
        try log.checkAlive(instance)
        log.state.withLock { state in
            for partition in partitions { state.members[memberId]?.paused.remove(partition) }
        }
    }

    public func seek(_ offsets: [TopicPartition: Int64], timeout: Duration) async throws(KafkaError) {
        try log.checkAlive(instance)
        try log.state.withLock { state throws(KafkaError) in
            for (partition, offset) in offsets {
                guard state.members[memberId]?.assignment.contains(partition) == true else {
                    throw KafkaError(code: -190, name: "_UNKNOWN_PARTITION", message: "seek: \(partition) is not assigned to \(memberId)")
                }
                state.members[memberId]?.positions[partition] = max(0, offset)
            }
        }
    }

    public func commit(_ offsets: [TopicPartition: Int64]) async throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let crashesAfter = try log.step(.commitOffsets, instance: instance)
        try log.state.withLock { state throws(KafkaError) in
            let generation = state.members[memberId]?.generation ?? -1
            try InMemoryLog.checkGeneration(member: memberId, generation: generation, in: state)
            state.committed.merge(offsets) { _, new in new }
        }
        if crashesAfter { throw log.crashAfter(.commitOffsets, instance: instance) }
    }

    /// Waits while a transaction still open holds offsets for one of `partitions` (as Kafka's
    /// stable offset fetch does): a new owner must not start from offsets a zombie's transaction
    /// is about to move.
    public func committed(_ partitions: [TopicPartition], timeout: Duration) async throws(KafkaError) -> [TopicPartition: Int64] {
        var waited = Duration.zero
        while true {
            try log.checkAlive(instance)
            let stable = log.state.withLock { state -> [TopicPartition: Int64]? in
                let pending = state.transactions.values.contains { transaction in
                    transaction.status == .open && partitions.contains { transaction.offsets[$0] != nil }
                }
                if pending { return nil }
                var offsets: [TopicPartition: Int64] = [:]
                for partition in partitions { offsets[partition] = state.committed[partition] }
                return offsets
            }
            if let stable { return stable }
            guard waited < timeout else {
                throw KafkaError(code: -185, name: "_TIMED_OUT", message: "committed offsets stayed unstable (in-memory log)")
            }
            try? await Task.sleep(for: .milliseconds(1))
            waited += .milliseconds(1)
        }
    }

    public func queryWatermarks(_ partition: TopicPartition, timeout: Duration) async throws(KafkaError) -> Watermarks {
        try log.checkAlive(instance)
        return Watermarks(low: 0, high: log.endOffset(partition))
    }

    /// Leaves the group: the handler sees the final revocation first (nothing for a dead
    /// instance: a killed process runs no handler).
    public func close() async {
        guard !log.isDead(instance), !closed.withLock({ $0 }) else { return }
        let assignment = log.state.withLock { $0.members[memberId]?.assignment ?? [] }
        if !assignment.isEmpty, let handler = handler.withLock({ $0 }) {
            await handler(RebalanceEvent(kind: .revoked, partitions: assignment, rebalanceProtocol: .eager))
        }
        closed.withLock { $0 = true }
        log.state.withLock { state in
            guard state.members.removeValue(forKey: memberId) != nil else { return }
            state.awaitingRevocation.remove(memberId)
            if state.awaitingRevocation.isEmpty, state.rebalancing {
                InMemoryLog.assign(in: &state)
            } else if !state.rebalancing {
                InMemoryLog.rebalance(in: &state)
            }
        }
    }
}
