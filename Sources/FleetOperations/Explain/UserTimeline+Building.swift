public import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Kafka

extension UserTimeline {
    /// Joins the user's log into steps and intent chains.
    ///
    /// The joins all follow from how the runtime writes (FoldCore): a history record names the
    /// inbox offset of the step that changed the user (`input`); an output's id is the step's
    /// origin (`KafkaRecords.origin(of:)` of that inbox record: its provenance headers, else its
    /// own coordinates) plus `:index`; a decision names its intent (`intent_id`) and delivery
    /// (`notification_id`). Steps whose record is the user's own, or that changed the user's
    /// state or wrote for the user, are kept; other users' records and ticks appear only as the
    /// cause of this user's timers firing. Copies of a record (at-least-once) count once.
    public init(log: UserLog, window: TimeWindow, profile: PolicyProfile) {
        let facts = StateFacts(profile: profile)
        let index = InboxIndex(log.inbox, user: log.userId)
        let history = HistoryChanges(log.history)
        let outputs = OutputsByOrigin(log.outputs)

        // Every step that concerns the user, by inbox offset; outputs whose origin is no longer
        // in the inbox form steps of their own.
        var offsets = index.ownOffsets.union(history.byOffset.keys)
        var orphanStems: [String] = []
        for stem in outputs.stems {
            if let offset = index.offset(ofStem: stem) { offsets.insert(offset) } else { orphanStems.append(stem) }
        }

        var steps: [TimelineStep] = []
        for offset in offsets {
            let message = index.messages[offset]
            let stepOutputs = message.flatMap { outputs.byStem[InboxIndex.stem(of: $0)] } ?? []
            let change = history.byOffset[offset]
            let at = change?.logTime ?? stepOutputs.map(\.at).max()
                ?? Timestamp(millisecondsSinceEpoch: message?.timestamp ?? 0)
            steps.append(TimelineStep(
                at: at, inbox: SourceCoordinates(topic: Topics.deliveryInbox, partition: log.partition, offset: offset),
                input: index.input(at: offset),
                outputs: stepOutputs,
                stateChanges: change.map { facts.changes(from: $0.before?.view, to: $0.after.view) } ?? []))
        }
        for stem in orphanStems {
            let stepOutputs = outputs.byStem[stem] ?? []
            steps.append(TimelineStep(
                at: stepOutputs.map(\.at).max() ?? Timestamp(millisecondsSinceEpoch: 0), inbox: nil,
                input: .missing("the inbox record these outputs derive from (\(stem)) is no longer retained"),
                outputs: stepOutputs, stateChanges: []))
        }
        // Log order; steps without an inbox record go by time, then by their first output's id.
        steps.sort {
            ($0.at, $0.inbox?.offset ?? .max, $0.outputs.first?.record.id ?? "")
                < ($1.at, $1.inbox?.offset ?? .max, $1.outputs.first?.record.id ?? "")
        }

        let shown = steps.filter { window.contains($0.at) }
        self.init(
            userId: log.userId, partition: log.partition, partitionCount: log.partitionCount, window: window,
            profileName: profile.name, steps: shown,
            chains: Self.chains(allSteps: steps, shown: shown, index: index, history: history, facts: facts))
    }

    /// Per intent seen in `shown` (arrived or decided there), every decision on it in `allSteps`,
    /// so a deferral before `--since` still explains a delivery inside the window.
    private static func chains(
        allSteps: [TimelineStep], shown: [TimelineStep], index: InboxIndex, history: HistoryChanges, facts: StateFacts
    ) -> [IntentChain] {
        var deliveries: [String: Delivery] = [:]
        for step in allSteps {
            for output in step.outputs {
                if case .delivery(let delivery) = output.record, deliveries[delivery.notificationId] == nil {
                    deliveries[delivery.notificationId] = delivery
                }
            }
        }
        var wanted: [String] = []
        var seen: Set<String> = []
        func want(_ id: String) { if seen.insert(id).inserted { wanted.append(id) } }
        for step in shown {
            if case .record(.intent(let intent), _) = step.input { want(intent.id) }
            for output in step.outputs { if case .decision(let decision) = output.record { want(decision.intentId) } }
        }

        // The user's state as of each step's end: its after-image, or the last one before it.
        var links: [String: [ChainLink]] = [:]
        var state: DeliveryStateView?
        for step in allSteps {
            if let offset = step.inbox?.offset, let change = history.byOffset[offset] { state = change.after.view }
            for output in step.outputs {
                guard case .decision(let decision) = output.record, seen.contains(decision.intentId) else { continue }
                let category = index.intents[decision.intentId]?.intent.category
                links[decision.intentId, default: []].append(ChainLink(
                    at: output.at, step: step.inbox, input: step.input, decision: decision,
                    // A deferral names the notification it waits in; only a final decision has a delivery.
                    delivery: decision.outcome.isFinal ? decision.notificationId.flatMap { deliveries[$0] } : nil,
                    state: facts.relevant(to: decision.rule, category: category, in: state)))
            }
        }
        return wanted.map { id in
            let arrival = index.intents[id]
            return IntentChain(
                intentId: id, intent: arrival?.intent,
                arrival: arrival.map { SourceCoordinates(topic: Topics.deliveryInbox, partition: $0.partition, offset: $0.offset) },
                arrivedAt: arrival?.at, links: links[id] ?? [])
        }
    }
}

/// The inbox partition by offset, with the origin stem of each record (what its outputs' ids
/// start with) and the user's own intents.
private struct InboxIndex {
    struct Arrival {
        var intent: Intent
        var partition: Int32
        var offset: Int64
        var at: Timestamp
    }

    let user: String
    var messages: [Int64: KafkaMessage] = [:]
    var ownOffsets: Set<Int64> = []
    var intents: [String: Arrival] = [:]
    private var offsetByStem: [String: Int64] = [:]

    init(_ inbox: [KafkaMessage], user: String) {
        self.user = user
        for message in inbox.sorted(by: { $0.offset < $1.offset }) where messages[message.offset] == nil {
            messages[message.offset] = message
            let stem = Self.stem(of: message)
            // A re-sent copy has its original's origin; the original's step made the outputs.
            if offsetByStem[stem] == nil { offsetByStem[stem] = message.offset }
            guard message.keyText == user else { continue }
            ownOffsets.insert(message.offset)
            if let value = message.value, case .intent(let intent)? = try? RecordCodec.decode(value, topic: message.topic),
               intents[intent.id] == nil {
                intents[intent.id] = Arrival(
                    intent: intent, partition: message.partition, offset: message.offset,
                    at: Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0))
            }
        }
    }

    /// The prefix every output id of this record's step shares (see `OutputIDs`).
    static func stem(of message: KafkaMessage) -> String {
        let origin = KafkaRecords.origin(of: message)
        return origin.index.map { "\(origin.coordinates):\($0)" } ?? origin.coordinates.description
    }

    func offset(ofStem stem: String) -> Int64? { offsetByStem[stem] }

    func input(at offset: Int64) -> StepInput {
        guard let message = messages[offset] else {
            return .missing("inbox offset \(offset) is no longer retained")
        }
        guard let value = message.value else { return .missing("inbox offset \(offset) has no value") }
        let record: FleetRecord
        do {
            record = try RecordCodec.decode(value, topic: message.topic)
        } catch {
            return .missing("inbox offset \(offset) does not decode: \(error)")
        }
        if case .tick(let tick) = record { return .tick(id: tick.id) }
        guard message.keyText == user else { return .otherUser(type: record.type) }
        let origin = KafkaRecords.origin(of: message).coordinates
        return .record(record, origin: origin == KafkaRecords.coordinates(message) ? nil : origin)
    }
}

/// The user's `delivery-worker.history` change records by the inbox offset of their step.
private struct HistoryChanges {
    struct Change {
        var before: DeliveryState?
        var after: DeliveryState
        var logTime: Timestamp?
    }

    private struct Envelope: Decodable {
        var after: DeliveryState
        var before: DeliveryState?
        var input: SourceCoordinates
        var log_time: String
    }

    var byOffset: [Int64: Change] = [:]

    init(_ messages: [KafkaMessage]) {
        let decoder = JSONDecoder()
        for message in messages {
            let kind = message.header(ChangelogRecords.kindHeader).map { String(decoding: $0, as: UTF8.self) }
            guard kind == ChangelogRecords.Kind.change.rawValue, let value = message.value,
                  let envelope = try? decoder.decode(Envelope.self, from: Data(value)),
                  envelope.input.topic == Topics.deliveryInbox,
                  byOffset[envelope.input.offset] == nil
            else { continue }
            byOffset[envelope.input.offset] = Change(
                before: envelope.before, after: envelope.after, logTime: Timestamp(rfc3339: envelope.log_time))
        }
    }
}

/// The user's output records grouped by the origin stem of the step that wrote them, each group
/// in output-index order; copies of an id count once.
private struct OutputsByOrigin {
    var byStem: [String: [StepOutput]] = [:]
    var stems: [String] { Array(byStem.keys) }

    init(_ messages: [KafkaMessage]) {
        var seen: Set<String> = []
        var indexed: [String: [(Int, StepOutput)]] = [:]
        for message in messages {
            guard let value = message.value, let record = try? RecordCodec.decode(value, topic: message.topic),
                  seen.insert(record.id).inserted,
                  let colon = record.id.lastIndex(of: ":"), let index = Int(record.id[record.id.index(after: colon)...])
            else { continue }
            let output = StepOutput(
                at: Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0), topic: message.topic, record: record)
            indexed[String(record.id[..<colon]), default: []].append((index, output))
        }
        for (stem, outputs) in indexed { byStem[stem] = outputs.sorted { $0.0 < $1.0 }.map(\.1) }
    }
}
