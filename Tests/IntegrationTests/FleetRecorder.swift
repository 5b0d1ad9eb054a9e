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
        /// Records read beyond the first copy of their id (re-sent or aborted copies).
        var copies: Int
        /// Ids that arrived with different bytes: a crash-equivalence failure within one run.
        var conflicts: [String]
        var intentIds: Set<String>
        var decidedIntentIds: Set<String>
        var budgetSuppressions: Int
        var deliveries: [Delivered]
        var deadLetters: Int
        var recordsRead: Int
    }

    private struct State {
        var records: [String: [UInt8]] = [:]
        var copies = 0
        var conflicts: [String] = []
        var intentIds: Set<String> = []
        var decidedIntentIds: Set<String> = []
        var budgetSuppressions = 0
        var deliveries: [String: Delivered] = [:]
        var deadLetters = 0
        var recordsRead = 0
        var dataRecordsRead = 0
        var inboxEnds: [TopicPartition: Int64] = [:]
        var written: [Worker: Int] = [:]
        var undecodable: [String] = []
    }

    let namespace: TopicNamespace
    private let consumer: KafkaConsumer
    private let state = Mutex(State())
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(bootstrap: String, namespace: TopicNamespace, partitions: Int32) async throws {
        self.namespace = namespace
        consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": bootstrap, "group.id": namespace.prefix + "recorder",
            "isolation.level": "read_committed", "fetch.wait.max.ms": "10",
        ]), maxBatchSize: 2000)
        var topics = Self.comparedTopics + [Topics.reminderInbox]
        topics += Worker.allCases.flatMap { [$0.stateTopic, $0.historyTopic] }
        topics += TopicSpec.all.filter { $0.role == .deadLetter }.map(\.name)
        var offsets: [TopicPartition: Int64] = [:]
        for topic in topics {
            for p in 0..<partitions { offsets[TopicPartition(namespace.physical(topic), p)] = KafkaConsumer.beginning }
        }
        try await consumer.assign(offsets)
        let consumer = self.consumer
        task.withLock {
            $0 = Task { [weak self] in
                do {
                    for try await batch in consumer.batches {
                        guard let self else { return }
                        self.take(batch)
                    }
                } catch {
                    self?.state.withLock { $0.undecodable.append("recorder stopped: \(error)") }
                }
            }
        }
    }

    func close() async {
        task.withLock { $0?.cancel() }
        await consumer.close()
    }

    /// The next offset after the last record seen on `partition` of a logical inbox topic.
    func inboxEnd(_ topic: String, _ partition: Int32) -> Int64 {
        state.withLock { $0.inboxEnds[TopicPartition(topic, partition)] ?? 0 }
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
                deliveries: Array($0.deliveries.values), deadLetters: $0.deadLetters, recordsRead: $0.recordsRead)
        }
    }

    private func take(_ batch: [KafkaMessage]) {
        state.withLock { state in
            for message in batch {
                guard let topic = namespace.logical(message.topic) else { continue }
                state.recordsRead += 1
                if let writer = Self.writer(of: message, topic: topic) { state.written[writer, default: 0] += 1 }
                if !Worker.allCases.contains(where: { topic == $0.stateTopic || topic == $0.historyTopic }) {
                    state.dataRecordsRead += 1
                }
                if topic == Topics.deliveryInbox || topic == Topics.reminderInbox {
                    let key = TopicPartition(topic, message.partition)
                    state.inboxEnds[key] = max(state.inboxEnds[key] ?? 0, message.offset + 1)
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
                    state.copies += 1
                    if first != value { state.conflicts.append(key) }
                    continue
                }
                state.records[key] = value
                switch record {
                case .intent(let intent) where topic == Topics.deliveryInbox:
                    state.intentIds.insert(intent.id)
                case .decision(let decision):
                    state.decidedIntentIds.insert(decision.intentId)
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
