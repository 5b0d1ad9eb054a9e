public import Kafka
import Synchronization

/// A Kafka-like log in memory, for running the real `WorkerRuntime` in fast tests through its
/// seam (`LogClients`): topics of partitions of records, one consumer group with committed
/// offsets, generations and an eager range assignment, transactions read_committed, and faults
/// injected at a chosen step of a chosen instance.
///
/// Deterministic: nothing here reads a clock or a random source. Offsets, generations, member
/// ids and transaction ids are counters; a record without a timestamp has none. Only the
/// consumer's wait for new records sleeps (`InMemoryConsumer`), which decides when a batch is
/// handed out, never what it holds.
///
/// Semantics kept from Kafka because the runtime relies on them (see `LogConsumer` and
/// `LogProducer`):
///
/// - a transaction's records take offsets when sent but are visible to read_committed readers
///   only once committed; an open transaction holds back every later record of its partitions
///   (the last stable offset); commit and abort markers take an offset each and are never handed
///   out;
/// - a transaction's offsets are committed with it, atomically, and refused when the consumer's
///   group generation is no longer current (as offsets committed directly are);
/// - a rebalance revokes every member's whole assignment (each member's handler runs before the
///   change applies), then bumps the generation and assigns the partitions by range;
/// - a crashed instance does nothing more: its open transaction aborts, its members leave the
///   group without a revocation, and every later call of its clients fails.
public final class InMemoryLog: Sendable {
    /// One operation of an instance that a fault can be injected at.
    public enum Step: Sendable, Hashable, CustomStringConvertible {
        /// A `send` of `records` records (`marker`: through the marker producer).
        case send(records: Int, marker: Bool)
        case beginTransaction
        case sendOffsetsToTransaction
        case commitTransaction
        case abortTransaction
        /// A consumer's direct offset commit (at-least-once).
        case commitOffsets
        /// A restore's read of a changelog partition.
        case restoreRead(partition: Int32)

        public var description: String {
            switch self {
            case .send(let records, let marker): "send(\(records)\(marker ? ", marker" : ""))"
            case .beginTransaction: "beginTransaction"
            case .sendOffsetsToTransaction: "sendOffsetsToTransaction"
            case .commitTransaction: "commitTransaction"
            case .abortTransaction: "abortTransaction"
            case .commitOffsets: "commitOffsets"
            case .restoreRead(let partition): "restoreRead(\(partition))"
            }
        }
    }

    /// What happens at a faulted step.
    public enum Fault: Sendable {
        /// The instance dies before the step takes effect (a SIGKILL just before the call).
        case crashBefore
        /// The step takes effect, then the instance dies before it hears back.
        case crashAfter
        /// The step fails with `error` and has no effect; the instance goes on.
        case fail(KafkaError)
        /// `body` runs just before the step takes effect (a test moves partitions there: a
        /// rebalance or an expired session at that very step); then the step goes on.
        case interrupt(@Sendable (Step) -> Void)
    }

    struct Entry: Sendable {
        enum Kind: Sendable { case data, commitMarker, abortMarker }
        var kind: Kind
        var key: [UInt8]?
        var value: [UInt8]?
        var headers: [KafkaHeader]
        var timestamp: Int64?
        /// The transaction that wrote it, nil for a plain send.
        var transaction: Int?
    }

    enum TransactionStatus: Sendable { case open, committed, aborted }

    struct Transaction: Sendable {
        var instance: String
        var status: TransactionStatus
        var partitions: Set<TopicPartition> = []
        var offsets: [TopicPartition: Int64] = [:]
    }

    struct Member: Sendable {
        var id: String
        var instance: String
        var topics: [String]
        var pausingOnAssignment: Set<String>
        /// The group generation this member's assignment belongs to.
        var generation: Int
        var assignment: [TopicPartition] = []
        var positions: [TopicPartition: Int64] = [:]
        var paused: Set<TopicPartition> = []
        var events: [RebalanceEvent] = []
        /// Set while a rebalance waits for this member's revocation.
        var revoking = false
        /// The topics to join again with once a `lost` event is handled (the session expired).
        var rejoining: [String]?

        /// The partitions the member's handler will believe it holds once it has handled its
        /// pending events: what a revocation or a loss takes away.
        var held: [TopicPartition] {
            events.last { $0.kind == .assigned }?.partitions ?? assignment
        }
    }

    struct State: Sendable {
        var topics: [String: [[Entry]]] = [:]
        var transactions: [Int: Transaction] = [:]
        var nextTransaction = 1
        var committed: [TopicPartition: Int64] = [:]
        var generation = 0
        /// Members in the order they joined (the range assignor orders them by id).
        var members: [String: Member] = [:]
        var nextMember = 1
        /// Members whose revocation a rebalance waits for; the assignment follows when empty.
        var awaitingRevocation: Set<String> = []
        var rebalancing = false
        var rebalanceAgain = false
        var dead: Set<String> = []
        var steps: [String: Int] = [:]
        var stepLog: [String: [Step]] = [:]
        /// Per instance, how many partitions its consumers paused (each partition of a call).
        var pauses: [String: Int] = [:]
        var faults: [String: (at: Int, fault: Fault)] = [:]
        var crashHandlers: [String: @Sendable (Step) -> Void] = [:]
    }

    let state = Mutex(State())
    /// The consumer group every member of this log joins.
    public let group: String

    public init(group: String = "in-memory-group") {
        self.group = group
    }

    // MARK: Topics

    /// Creates `topics` with `partitions` partitions each (existing ones are left as they are).
    public func createTopics(_ topics: [String], partitions: Int) {
        state.withLock { state in
            for topic in topics where state.topics[topic] == nil {
                state.topics[topic] = Array(repeating: [], count: partitions)
            }
        }
    }

    public func partitionCounts(of topics: [String]) -> [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for topic in topics { if let partitions = state.topics[topic] { counts[topic] = partitions.count } }
            return counts
        }
    }

    /// Appends records outside any instance (a test's input), each to its partition or murmur2
    /// of its key; returns where they went.
    @discardableResult
    public func append(_ records: [ProducerRecord]) throws(KafkaError) -> [DeliveryReport] {
        try state.withLock { state throws(KafkaError) in
            try Self.append(records, transaction: nil, in: &state)
        }
    }

    /// Every record of `topic` a read_committed reader sees now, partition by partition.
    public func committedRecords(_ topic: String) -> [[KafkaMessage]] {
        state.withLock { state in
            guard let partitions = state.topics[topic] else { return [] }
            return partitions.indices.map { partition in
                Self.visible(TopicPartition(topic, Int32(partition)), from: 0, limit: .max, in: state).messages
            }
        }
    }

    /// Every data record of `topic` written so far, read_uncommitted (aborted and open
    /// transactions' records included), partition by partition.
    public func allRecords(_ topic: String) -> [[KafkaMessage]] {
        state.withLock { state in
            guard let partitions = state.topics[topic] else { return [] }
            return partitions.enumerated().map { partition, entries in
                entries.enumerated().compactMap { offset, entry in
                    entry.kind == .data ? Self.message(entry, TopicPartition(topic, Int32(partition)), Int64(offset)) : nil
                }
            }
        }
    }

    /// The group's committed offsets.
    public var committedOffsets: [TopicPartition: Int64] { state.withLock { $0.committed } }

    /// The offset the next record of `partition` will get.
    public func endOffset(_ partition: TopicPartition) -> Int64 {
        state.withLock { Int64($0.topics[partition.topic]?[Int(partition.partition)].count ?? 0) }
    }

    // MARK: Faults

    /// Injects `fault` at `instance`'s `step`-th step (1-based, counted over every client of the
    /// instance). `onCrash` is told the step an injected crash happened at.
    public func inject(_ fault: Fault, instance: String, atStep step: Int, onCrash: (@Sendable (Step) -> Void)? = nil) {
        state.withLock { state in
            state.faults[instance] = (step, fault)
            if let onCrash { state.crashHandlers[instance] = onCrash }
        }
    }

    /// The steps `instance` took so far, in order.
    public func steps(of instance: String) -> [Step] {
        state.withLock { $0.stepLog[instance] ?? [] }
    }

    public func isDead(_ instance: String) -> Bool { state.withLock { $0.dead.contains(instance) } }

    /// How many partitions `instance`'s consumers paused so far, each paused partition of each
    /// `pause` call counted (a test checks that backpressure happened at all).
    public func pauses(of instance: String) -> Int { state.withLock { $0.pauses[instance] ?? 0 } }

    /// Counts a step of `instance` and applies the fault injected there, if any: throws when
    /// the step must not take effect. Call `afterStep` once it took effect.
    func step(_ step: Step, instance: String) throws(KafkaError) -> Bool {
        typealias Callback = @Sendable (Step) -> Void
        let (outcome, handler, interrupt) = state.withLock { state -> (Result<Bool, KafkaError>, Callback?, Callback?) in
            if state.dead.contains(instance) { return (.failure(Self.crashed(instance)), nil, nil) }
            let count = (state.steps[instance] ?? 0) + 1
            state.steps[instance] = count
            state.stepLog[instance, default: []].append(step)
            guard let planned = state.faults[instance], planned.at == count else { return (.success(false), nil, nil) }
            state.faults[instance] = nil
            switch planned.fault {
            case .crashBefore:
                return (.failure(Self.crashed(instance)), Self.kill(instance, in: &state), nil)
            case .crashAfter:
                return (.success(true), nil, nil)
            case .fail(let error):
                return (.failure(error), nil, nil)
            case .interrupt(let body):
                return (.success(false), nil, body)
            }
        }
        handler?(step)
        interrupt?(step)
        try checkAlive(instance)
        return try outcome.get()
    }

    /// The instance took a step planned to crash after it: it dies now.
    func crashAfter(_ step: Step, instance: String) -> KafkaError {
        let handler = state.withLock { state in Self.kill(instance, in: &state) }
        handler?(step)
        return Self.crashed(instance)
    }

    /// Throws when `instance` is dead.
    func checkAlive(_ instance: String) throws(KafkaError) {
        if state.withLock({ $0.dead.contains(instance) }) { throw Self.crashed(instance) }
    }

    static func crashed(_ instance: String) -> KafkaError {
        KafkaError(code: -150, name: "_FATAL", message: "instance \(instance) crashed (in-memory log)", isFatal: true)
    }

    /// Marks `instance` dead: its open transactions abort, its members leave without a
    /// revocation (their session is gone), and the rest of the group rebalances.
    private static func kill(_ instance: String, in state: inout State) -> (@Sendable (Step) -> Void)? {
        guard !state.dead.contains(instance) else { return nil }
        state.dead.insert(instance)
        for (id, transaction) in state.transactions where transaction.instance == instance && transaction.status == .open {
            end(id, status: .aborted, in: &state)
        }
        let gone = state.members.values.filter { $0.instance == instance }.map(\.id)
        for id in gone {
            state.members[id] = nil
            state.awaitingRevocation.remove(id)
        }
        if !gone.isEmpty { rebalance(in: &state) }
        return state.crashHandlers.removeValue(forKey: instance)
    }

    // MARK: Records

    static func append(_ records: [ProducerRecord], transaction: Int?, in state: inout State) throws(KafkaError) -> [DeliveryReport] {
        var reports: [DeliveryReport] = []
        reports.reserveCapacity(records.count)
        for record in records {
            guard let count = state.topics[record.topic]?.count else {
                throw KafkaError(code: 3, name: "UNKNOWN_TOPIC_OR_PART", message: "no topic \(record.topic) (in-memory log)")
            }
            let partition = record.partition ?? record.key.map { KeyPartitioner.partition(forKey: $0, partitions: Int32(count)) } ?? 0
            guard partition >= 0, partition < count else {
                throw KafkaError(code: 3, name: "UNKNOWN_TOPIC_OR_PART", message: "no partition \(record.topic)[\(partition)] (in-memory log)")
            }
            let offset = Int64(state.topics[record.topic]?[Int(partition)].count ?? 0)
            state.topics[record.topic]?[Int(partition)].append(Entry(
                kind: .data, key: record.key, value: record.value, headers: record.headers, timestamp: record.timestamp,
                transaction: transaction))
            if let transaction { state.transactions[transaction]?.partitions.insert(TopicPartition(record.topic, partition)) }
            reports.append(DeliveryReport(topic: record.topic, partition: partition, offset: offset))
        }
        return reports
    }

    static func message(_ entry: Entry, _ partition: TopicPartition, _ offset: Int64) -> KafkaMessage {
        KafkaMessage(
            topic: partition.topic, partition: partition.partition, offset: offset, key: entry.key, value: entry.value,
            headers: entry.headers, timestamp: entry.timestamp, timestampType: entry.timestamp == nil ? nil : .createTime)
    }

    /// read_committed from `offset`: up to `limit` visible records, and the position after the
    /// last entry passed (markers and aborted records are passed over; an open transaction's
    /// record stops the read: the last stable offset).
    static func visible(
        _ partition: TopicPartition, from offset: Int64, limit: Int, in state: State
    ) -> (messages: [KafkaMessage], next: Int64) {
        guard let entries = state.topics[partition.topic]?[Int(partition.partition)] else { return ([], offset) }
        var messages: [KafkaMessage] = []
        var next = max(0, offset)
        while next < entries.count, messages.count < limit {
            let entry = entries[Int(next)]
            if let transaction = entry.transaction {
                let status = state.transactions[transaction]?.status ?? .aborted
                if status == .open { break }
                if status == .aborted || entry.kind != .data {
                    next += 1
                    continue
                }
            } else if entry.kind != .data {
                next += 1
                continue
            }
            messages.append(message(entry, partition, next))
            next += 1
        }
        return (messages, next)
    }

    /// The last stable offset of `partition`: the first record of a transaction still open, or
    /// the end.
    static func lastStableOffset(_ partition: TopicPartition, in state: State) -> Int64 {
        guard let entries = state.topics[partition.topic]?[Int(partition.partition)] else { return 0 }
        for (offset, entry) in entries.enumerated() {
            if let transaction = entry.transaction, state.transactions[transaction]?.status == .open { return Int64(offset) }
        }
        return Int64(entries.count)
    }

    // MARK: Transactions

    static func begin(instance: String, in state: inout State) -> Int {
        let id = state.nextTransaction
        state.nextTransaction += 1
        state.transactions[id] = Transaction(instance: instance, status: .open)
        return id
    }

    /// Ends a transaction: a marker in each of its partitions; on commit its offsets are the
    /// group's.
    static func end(_ id: Int, status: TransactionStatus, in state: inout State) {
        guard let transaction = state.transactions[id], transaction.status == .open else { return }
        state.transactions[id]?.status = status
        for partition in transaction.partitions.sorted() {
            state.topics[partition.topic]?[Int(partition.partition)].append(Entry(
                kind: status == .committed ? .commitMarker : .abortMarker, key: nil, value: nil, headers: [], timestamp: nil,
                transaction: id))
        }
        if status == .committed { state.committed.merge(transaction.offsets) { _, new in new } }
    }

    // MARK: Group

    /// Offsets from `member` at `generation` are accepted only while it is that generation's
    /// member.
    static func checkGeneration(member: String, generation: Int, in state: State) throws(KafkaError) {
        guard let current = state.members[member], current.rejoining == nil, current.generation == generation,
              generation == state.generation
        else {
            throw KafkaError(
                code: 22, name: "ILLEGAL_GENERATION",
                message: "member \(member) of generation \(generation) is not current (group generation \(state.generation))",
                requiresAbort: true)
        }
    }

    /// Starts an eager rebalance: every member with partitions is asked to revoke them; the new
    /// assignment follows once all did (`revoked`).
    static func rebalance(in state: inout State) {
        if state.rebalancing {
            state.rebalanceAgain = true
            return
        }
        state.rebalancing = true
        for id in state.members.keys.sorted() where state.members[id]?.rejoining == nil {
            guard let held = state.members[id]?.held, !held.isEmpty else { continue }
            state.members[id]?.events.append(RebalanceEvent(kind: .revoked, partitions: held, rebalanceProtocol: .eager))
            state.members[id]?.revoking = true
            state.awaitingRevocation.insert(id)
        }
        if state.awaitingRevocation.isEmpty { assign(in: &state) }
    }

    /// `member` handled its revocation: its partitions are no longer its own.
    static func revoked(member id: String, in state: inout State) {
        state.members[id]?.assignment = []
        state.members[id]?.positions = [:]
        state.members[id]?.paused = []
        state.members[id]?.revoking = false
        guard state.awaitingRevocation.remove(id) != nil, state.awaitingRevocation.isEmpty, state.rebalancing else { return }
        assign(in: &state)
    }

    /// The range assignment of every subscribed partition over the members in id order, under
    /// a new generation.
    static func assign(in state: inout State) {
        state.generation += 1
        let ids = state.members.keys.sorted()
        var byMember: [String: [TopicPartition]] = [:]
        let topics = Set(ids.flatMap { state.members[$0]?.topics ?? [] })
        for topic in topics.sorted() {
            let subscribers = ids.filter { state.members[$0]?.topics.contains(topic) == true }
            let count = state.topics[topic]?.count ?? 0
            guard !subscribers.isEmpty, count > 0 else { continue }
            let share = count / subscribers.count, extra = count % subscribers.count
            var next = 0
            for (index, id) in subscribers.enumerated() {
                let take = share + (index < extra ? 1 : 0)
                byMember[id, default: []] += (next..<(next + take)).map { TopicPartition(topic, Int32($0)) }
                next += take
            }
        }
        for id in ids where state.members[id]?.rejoining == nil {
            state.members[id]?.generation = state.generation
            let partitions = (byMember[id] ?? []).sorted()
            guard !partitions.isEmpty else { continue }
            state.members[id]?.events.append(RebalanceEvent(kind: .assigned, partitions: partitions, rebalanceProtocol: .eager))
        }
        state.rebalancing = false
        if state.rebalanceAgain {
            state.rebalanceAgain = false
            rebalance(in: &state)
        }
    }

    /// Applies an assignment to `member` as its event is handed to its handler: positions at
    /// the committed offsets, partitions of the pausing topics paused.
    static func applyAssignment(_ partitions: [TopicPartition], member id: String, in state: inout State) {
        guard var member = state.members[id] else { return }
        member.assignment = partitions
        for partition in partitions {
            member.positions[partition] = state.committed[partition] ?? 0
            if member.pausingOnAssignment.contains(partition.topic) { member.paused.insert(partition) }
        }
        state.members[id] = member
    }

    /// `member` handled its `lost` event: the partitions leave it, and it joins the group again,
    /// which rebalances.
    static func rejoin(member id: String, in state: inout State) {
        guard let topics = state.members[id]?.rejoining else { return }
        state.members[id]?.assignment = []
        state.members[id]?.positions = [:]
        state.members[id]?.paused = []
        state.members[id]?.rejoining = nil
        state.members[id]?.topics = topics
        rebalance(in: &state)
    }

    /// Starts a rebalance now (as a member joining or a session timeout would).
    public func rebalance() {
        state.withLock { Self.rebalance(in: &$0) }
    }

    /// `instance`'s members lose their partitions without a revocation (their session
    /// expired): the group moves on at a new generation without them, each is told `lost` at its
    /// next poll and then joins again.
    public func expireSession(of instance: String) {
        state.withLock { state in
            let ids = state.members.values.filter { $0.instance == instance }.map(\.id).sorted()
            for id in ids {
                guard let member = state.members[id] else { continue }
                // Like librdkafka, the member keeps its assignment (it may still seek and pause
                // it, but nothing is fetched) until its handler has heard `lost`.
                state.members[id]?.revoking = false
                state.members[id]?.events.append(RebalanceEvent(kind: .lost, partitions: member.held, rebalanceProtocol: .eager))
                state.members[id]?.rejoining = member.rejoining ?? member.topics
                state.members[id]?.topics = []
                state.members[id]?.generation = -1
                state.awaitingRevocation.remove(id)
            }
            // Out of the group until they poll again; the others rebalance now.
            Self.rebalance(in: &state)
        }
    }

    /// The group's members now: id → assigned partitions.
    public var assignments: [String: [TopicPartition]] {
        state.withLock { state in state.members.mapValues(\.assignment) }
    }

    /// Whether no rebalance is under way and no member has an event to handle.
    public var isStable: Bool {
        state.withLock { state in !state.rebalancing && state.members.values.allSatisfy { $0.events.isEmpty } }
    }
}
