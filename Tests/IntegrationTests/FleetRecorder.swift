import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Synchronization

/// Reads, in the background, everything the fleet writes in one namespace — inboxes, the four
/// output topics, changelogs and dead letters — and keeps:
///
/// - each record of the compared topics by id (`rin.delivery.inbox` and the four outputs), its
///   first bytes, how many copies arrived and any id seen with different bytes;
/// - the highest offset seen per inbox partition, for deciding that a wave is complete;
/// - per worker, how many records it has written so far, so a fault injector can strike right
///   after a worker produced (and before it committed).
///
/// Reads `read_committed`, as the fleet's own consumers do; on Tansu that still shows records of
/// aborted transactions, which is why everything is compared by distinct id.
final class FleetRecorder: Sendable {
    /// Topics whose records are compared between runs, by id.
    static let comparedTopics = [Topics.deliveryInbox, Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents]

    struct Delivered: Sendable, Hashable {
        var id: String
        var userId: String
        var category: String
        var timestamp: Timestamp
    }

    /// What one run wrote, read back.
    struct Snapshot: Sendable {
        /// `topic id` → the record's bytes (first copy).
        var records: [String: [UInt8]]
        /// Per topic, records read beyond the first copy of their id (re-sent or aborted copies).
        var copies: [String: Int]
        /// Ids that arrived with different bytes: a crash-equivalence failure within one run.
        var conflicts: [String]
        var intentIds: Set<String>
        var decidedIntentIds: Set<String>
        var budgetSuppressions: Int
        var deliveries: [Delivered]
        var deadLetters: Int
        var recordsRead: Int
        /// Per inbox topic (generations apart), the latest record timestamp read.
        var inboxLatest: [String: Timestamp]
    }

    private struct State {
        var records: [String: [UInt8]] = [:]
        var copies: [String: Int] = [:]
        var conflicts: [String] = []
        var intentIds: Set<String> = []
        var decidedIntentIds: Set<String> = []
        var budgetSuppressions = 0
        var deliveries: [String: Delivered] = [:]
        var deadLetters = 0
        var recordsRead = 0
        var dataRecordsRead = 0
        var inboxEnds: [TopicPartition: Int64] = [:]
        var inboxLatest: [String: Timestamp] = [:]
        /// Per inbox partition, each record's offset and the offset of the first copy of its id.
        var inboxLog: [TopicPartition: [(offset: Int64, firstCopy: Int64)]] = [:]
        var inboxFirstCopies: [String: Int64] = [:]
        var written: [Worker: Int] = [:]
        var undecodable: [String] = []
    }

    let namespace: TopicNamespace
    /// Reads what is compared, as the fleet's consumers read (`read_committed`).
    private let consumer: KafkaConsumer
    /// Counts what each worker writes as soon as it is appended (`read_uncommitted`: under
    /// exactly-once, `read_committed` shows a transaction's records only once it committed —
    /// too late to strike between produce and commit).
    private let watcher: KafkaConsumer
    private let state = Mutex(State())
    private let tasks = Mutex<[Task<Void, Never>]>([])

    /// `generationInboxes`: later generations' inbox topics (logical name → partitions) to read
    /// like the inboxes, for runs that migrate a worker (their records count under the
    /// generation-1 name, where carried-over copies are copies).
    init(bootstrap: String, namespace: TopicNamespace, partitions: Int32, generationInboxes: [String: Int32] = [:]) async throws {
        self.namespace = namespace
        consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": bootstrap, "group.id": namespace.prefix + "recorder",
            "isolation.level": "read_committed", "fetch.wait.max.ms": "10",
        ]), maxBatchSize: 2000, logger: .tests)
        watcher = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": bootstrap, "group.id": namespace.prefix + "watcher",
            "isolation.level": "read_uncommitted", "fetch.wait.max.ms": "5",
        ]), maxBatchSize: 2000, logger: .tests)
        var topics = Self.comparedTopics + [Topics.reminderInbox]
        topics += Worker.allCases.flatMap { [$0.stateTopic, $0.historyTopic] }
        topics += TopicSpec.all.filter { $0.role == .deadLetter }.map(\.name)
        var offsets: [TopicPartition: Int64] = [:]
        for topic in topics {
            for p in 0..<partitions { offsets[TopicPartition(namespace.physical(topic), p)] = KafkaConsumer.beginning }
        }
        for (topic, count) in generationInboxes {
            for p in 0..<count { offsets[TopicPartition(namespace.physical(topic), p)] = KafkaConsumer.beginning }
        }
        try await consumer.assign(offsets)
        try await watcher.assign(offsets)
        let consumer = self.consumer
        let watcher = self.watcher
        tasks.withLock {
            $0.append(Task { [weak self] in
                do {
                    for try await batch in consumer.batches {
                        guard let self else { return }
                        self.take(batch)
                    }
                } catch {
                    self?.state.withLock { $0.undecodable.append("recorder stopped: \(error)") }
                }
            })
            $0.append(Task { [weak self] in
                do {
                    for try await batch in watcher.batches {
                        guard let self else { return }
                        self.count(batch)
                    }
                } catch {
                    self?.state.withLock { $0.undecodable.append("watcher stopped: \(error)") }
                }
            })
        }
    }

    func close() async {
        tasks.withLock { $0.forEach { $0.cancel() } }
        await consumer.close()
        await watcher.close()
    }

    /// The next offset after the last record seen on `partition` of a logical inbox topic.
    func inboxEnd(_ topic: String, _ partition: Int32) -> Int64 {
        state.withLock { $0.inboxEnds[TopicPartition(topic, partition)] ?? 0 }
    }

    /// Whether the inbox partition holds a record at or after `offset` whose id has no copy
    /// before `offset`: work that a worker which committed `offset` has not done yet. Copies of
    /// records before `offset` are no work (P-IDEM-1), and a unit holding only them commits its
    /// offsets in a transaction without records, which the test broker drops.
    func hasNewRecords(_ topic: String, _ partition: Int32, from offset: Int64) -> Bool {
        state.withLock { state in
            (state.inboxLog[TopicPartition(topic, partition)] ?? []).contains { $0.offset >= offset && $0.firstCopy >= offset }
        }
    }

    /// Inbox, output and dead-letter records seen so far (changelogs excluded: restarts write
    /// restore markers there), to tell whether anything arrived between two looks.
    var dataRecordsRead: Int { state.withLock { $0.dataRecordsRead } }

    /// Intents read from the delivery inbox that no decision read so far names.
    var undecidedIntents: Int { state.withLock { $0.intentIds.subtracting($0.decidedIntentIds).count } }

    /// Records `worker` has written so far (outputs, forwards and changelog).
    func written(by worker: Worker) -> Int { state.withLock { $0.written[worker] ?? 0 } }

    var problems: [String] { state.withLock { $0.undecodable } }

    func snapshot() -> Snapshot {
        state.withLock {
            Snapshot(
                records: $0.records, copies: $0.copies, conflicts: $0.conflicts, intentIds: $0.intentIds,
                decidedIntentIds: $0.decidedIntentIds, budgetSuppressions: $0.budgetSuppressions,
                deliveries: Array($0.deliveries.values), deadLetters: $0.deadLetters, recordsRead: $0.recordsRead,
                inboxLatest: $0.inboxLatest)
        }
    }

    private func take(_ batch: [KafkaMessage]) {
        state.withLock { state in
            for message in batch {
                guard let physicalTopic = namespace.logical(message.topic) else { continue }
                let topic = Topics.generationBase(of: physicalTopic).base
                state.recordsRead += 1
                if !Worker.allCases.contains(where: { topic == $0.stateTopic || topic == $0.historyTopic }) {
                    state.dataRecordsRead += 1
                }
                if topic == Topics.deliveryInbox || topic == Topics.reminderInbox {
                    let partition = TopicPartition(physicalTopic, message.partition)
                    state.inboxEnds[partition] = max(state.inboxEnds[partition] ?? 0, message.offset + 1)
                    if let time = message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)) {
                        state.inboxLatest[physicalTopic] = max(state.inboxLatest[physicalTopic] ?? time, time)
                    }
                    let id = message.value.flatMap { try? RecordCodec.decode($0, topic: topic).id } ?? "\(message.offset)"
                    let first = state.inboxFirstCopies["\(partition) \(id)"] ?? message.offset
                    state.inboxFirstCopies["\(partition) \(id)"] = first
                    state.inboxLog[partition, default: []].append((message.offset, first))
                    if first != message.offset && topic == Topics.reminderInbox { state.copies[topic, default: 0] += 1 }
                }
                if topic.hasSuffix(".dlq") {
                    state.deadLetters += 1
                    continue
                }
                guard Self.comparedTopics.contains(topic) else { continue }
                guard let value = message.value, let record = try? RecordCodec.decode(value, topic: topic) else {
                    state.undecodable.append("\(topic)[\(message.partition)]@\(message.offset)")
                    continue
                }
                let key = "\(topic) \(record.id)"
                if let first = state.records[key] {
                    state.copies[topic, default: 0] += 1
                    if first != value { state.conflicts.append(key) }
                    continue
                }
                state.records[key] = value
                switch record {
                case .intent(let intent) where topic == Topics.deliveryInbox:
                    state.intentIds.insert(intent.id)
                case .decision(let decision):
                    if let intentId = decision.intentId { state.decidedIntentIds.insert(intentId) }
                    if decision.rule == "P-BUD-1" && decision.outcome == .suppressed { state.budgetSuppressions += 1 }
                case .delivery(let delivery):
                    state.deliveries[delivery.id] = Delivered(
                        id: delivery.id, userId: delivery.userId, category: delivery.category,
                        timestamp: Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0))
                default:
                    break
                }
            }
        }
    }

    private func count(_ batch: [KafkaMessage]) {
        state.withLock { state in
            for message in batch {
                guard let topic = namespace.logical(message.topic), let writer = Self.writer(of: message, topic: topic) else { continue }
                state.written[writer, default: 0] += 1
            }
        }
    }

    /// The worker that wrote `message`: inbox records name their origin in `source-topic`.
    private static func writer(of message: KafkaMessage, topic: String) -> Worker? {
        if let owner = Worker.allCases.first(where: { topic == $0.stateTopic || topic == $0.historyTopic }) { return owner }
        switch topic {
        case Topics.reminderInbox:
            return .reminder
        case Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents:
            return .delivery
        case Topics.deliveryInbox:
            let source = message.header(KafkaRecords.Header.sourceTopic).map { String(decoding: $0, as: UTF8.self) }
            switch source {
            case Topics.scoreBatches: return .score
            case Topics.syncResults: return .sync
            case Topics.accessRequests: return .access
            case Topics.reminders: return .reminder
            case Topics.appActivity: return .delivery
            default: return nil
            }
        default:
            return nil
        }
    }
}
