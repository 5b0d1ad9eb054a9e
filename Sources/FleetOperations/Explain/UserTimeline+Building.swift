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
        let history = HistoryChanges(log.history, refolded: log.refolded)
        let outputs = OutputsByOrigin(log.outputs)

        // Every step that concerns the user, by log position; outputs whose origin is no longer
        // in any generation of the log form steps of their own. A record carried over to the
        // next generation was folded there only: its old position is no step (a change the old
        // history recorded there belongs to an attempt past the cut that was never committed).
        var positions = index.ownPositions.union(history.byPosition.keys)
        var orphanStems: [String] = []
        for stem in outputs.stems {
            if let position = index.position(ofStem: stem) { positions.insert(position) } else { orphanStems.append(stem) }
        }
        positions.subtract(index.carried)

        var steps: [TimelineStep] = []
        for position in positions {
            let message = index.messages[position]
            let stepOutputs = message.flatMap { outputs.byStem[InboxIndex.stem(of: $0)] } ?? []
            let change = history.byPosition[position]
            let at = change?.logTime ?? stepOutputs.map(\.at).max()
                ?? Timestamp(millisecondsSinceEpoch: message?.timestamp ?? 0)
            steps.append(TimelineStep(
                at: at, inbox: position,
                input: index.input(at: position),
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
        // Log order (generation, then offset); steps without an inbox record go by time, then by
        // their first output's id.
        func order(_ step: TimelineStep) -> (Timestamp, Int, Int64, String) {
            (step.at, step.inbox.map(InboxIndex.generation(of:)) ?? .max, step.inbox?.offset ?? .max,
             step.outputs.first?.record.id ?? "")
        }
        steps.sort { order($0) < order($1) }

        let shown = steps.filter { window.contains($0.at) }
        self.init(
            userId: log.userId, partition: log.partition, partitionCount: log.partitionCount, window: window,
            profileName: profile.name, steps: shown,
            chains: Self.chains(allSteps: steps, shown: shown, index: index, history: history, facts: facts),
            generations: log.generations)
    }

    /// Per intent seen in `shown` (arrived or decided there), every decision on it in `allSteps`,
    /// so a deferral before `--since` still explains a delivery inside the window; then, in log
    /// order among them, the decisions on every notification the engine made from it (a digest
    /// its `digested` decision names, or whose delivery merges it), so the chain ends where the
    /// notification did.
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
            for output in step.outputs {
                if case .decision(let decision) = output.record, let intentId = decision.intentId { want(intentId) }
            }
        }

        // The user's state as of each step's end: its after-image, or the last one before it.
        // Links carry their place in the log's output order, so a chain can interleave both kinds.
        var links: [String: [(order: Int, link: ChainLink)]] = [:]
        var engineMade: [String: [(order: Int, link: ChainLink)]] = [:]
        var state: DeliveryStateView?
        var order = 0
        for step in allSteps {
            if let position = step.inbox, let change = history.byPosition[position] { state = change.after.view }
            for output in step.outputs {
                guard case .decision(let decision) = output.record else { continue }
                order += 1
                if let intentId = decision.intentId {
                    guard seen.contains(intentId) else { continue }
                    let category = index.intents[intentId]?.intent.category
                    links[intentId, default: []].append((order, ChainLink(
                        at: output.at, step: step.inbox, input: step.input, decision: decision,
                        // A deferral names the notification it waits in; only a final decision has a delivery.
                        delivery: decision.outcome.isFinal ? decision.notificationId.flatMap { deliveries[$0] } : nil,
                        state: facts.relevant(to: decision.rule, category: category, in: state))))
                } else if let notificationId = decision.notificationId {
                    engineMade[notificationId, default: []].append((order, ChainLink(
                        at: output.at, step: step.inbox, input: step.input, decision: decision,
                        delivery: decision.outcome == .delivered ? deliveries[notificationId] : nil,
                        state: facts.relevant(to: decision.rule, category: nil, in: state))))
                }
            }
        }
        // Which engine-made notifications each intent went into.
        var madeFrom: [String: [String]] = [:]
        for (intentId, intentLinks) in links {
            for notificationId in intentLinks.compactMap(\.link.decision.notificationId) where engineMade[notificationId] != nil {
                madeFrom[intentId, default: []].append(notificationId)
            }
        }
        for (notificationId, delivery) in deliveries where engineMade[notificationId] != nil {
            for intentId in delivery.mergedIntents where seen.contains(intentId) {
                madeFrom[intentId, default: []].append(notificationId)
            }
        }
        return wanted.map { id in
            let arrival = index.intents[id]
            var all = links[id] ?? []
            for notificationId in Set(madeFrom[id] ?? []) { all += engineMade[notificationId] ?? [] }
            return IntentChain(
                intentId: id, intent: arrival?.intent,
                arrival: arrival?.position,
                arrivedAt: arrival?.at, links: all.sorted { $0.order < $1.order }.map(\.link))
        }
    }
}

/// The user's partition of every generation of the log by position, with the origin stem of
/// each record (what its outputs' ids start with) and the user's own intents.
///
/// A record carried over from one generation's log into the next keeps its origin (so its
/// stem): of the copies in several generations, the newest generation's is the one folded (the
/// old fold stopped before it, see `PartitionMigration`), and the older ones are `carried`.
/// Within one generation the first copy of a stem is the one whose step made the outputs (a
/// re-sent copy has its original's origin).
private struct InboxIndex {
    struct Arrival {
        var intent: Intent
        var position: SourceCoordinates
        var at: Timestamp
    }

    let user: String
    var messages: [SourceCoordinates: KafkaMessage] = [:]
    var ownPositions: Set<SourceCoordinates> = []
    /// Positions of records carried over into a later generation's log, where they were folded.
    var carried: Set<SourceCoordinates> = []
    var intents: [String: Arrival] = [:]
    private var positionByStem: [String: SourceCoordinates] = [:]

    init(_ inbox: [KafkaMessage], user: String) {
        self.user = user
        let ordered = inbox.map { (KafkaRecords.coordinates($0), $0) }
            .sorted { (Self.generation(of: $0.0), $0.0.offset) < (Self.generation(of: $1.0), $1.0.offset) }
        for (position, message) in ordered where messages[position] == nil {
            messages[position] = message
            let stem = Self.stem(of: message)
            if let earlier = positionByStem[stem] {
                guard Self.generation(of: earlier) < Self.generation(of: position) else { continue }
                carried.insert(earlier)
            }
            positionByStem[stem] = position
        }
        for (position, message) in ordered where message.keyText == user && !carried.contains(position) {
            ownPositions.insert(position)
            if let value = message.value, case .intent(let intent)? = try? RecordCodec.decode(value, topic: message.topic),
               intents[intent.id] == nil {
                intents[intent.id] = Arrival(
                    intent: intent, position: position, at: Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0))
            }
        }
    }

    /// The generation of the log `position` is in (1 for `rin.delivery.inbox`).
    static func generation(of position: SourceCoordinates) -> Int { Topics.generationBase(of: position.topic).generation }

    /// The prefix every output id of this record's step shares (see `OutputIDs`).
    static func stem(of message: KafkaMessage) -> String {
        let origin = KafkaRecords.origin(of: message)
        return origin.index.map { "\(origin.coordinates):\($0)" } ?? origin.coordinates.description
    }

    func position(ofStem stem: String) -> SourceCoordinates? { positionByStem[stem] }

    func input(at position: SourceCoordinates) -> StepInput {
        let place = "\(position.topic)[\(position.partition)]@\(position.offset)"
        guard let message = messages[position] else {
            return .missing("\(place) is no longer retained")
        }
        guard let value = message.value else { return .missing("\(place) has no value") }
        let record: FleetRecord
        do {
            record = try RecordCodec.decode(value, topic: message.topic)
        } catch {
            return .missing("\(place) does not decode: \(error)")
        }
        if case .tick(let tick) = record { return .tick(id: tick.id) }
        guard message.keyText == user else { return .otherUser(type: record.type) }
        let origin = KafkaRecords.origin(of: message).coordinates
        return .record(record, origin: origin == KafkaRecords.coordinates(message) ? nil : origin)
    }
}

/// The user's state before and after each step that changed it, by the log position of the
/// step (`input`: the log generation it was folded in), from every generation's history. A
/// migration copies the old history into the new one unchanged (header `fleet-copied-from`), so
/// a copy has its original's position and counts once.
///
/// A per-input change record (the builds before per-unit history, `FLEET_STATE_IMAGES=json`)
/// says both states. A per-unit image says the state after the unit's last change of the user:
/// its before is the user's previous image; inside a unit that changed the user more than once,
/// both come from the re-fold (`UserLog.refolded`), and a unit the re-fold did not reach (before
/// the log read with `--since`) shows its whole change at its last step.
private struct HistoryChanges {
    struct Change {
        var before: DeliveryState?
        var after: DeliveryState
        var logTime: Timestamp?
    }

    var byPosition: [SourceCoordinates: Change] = [:]

    init(_ messages: [KafkaMessage], refolded: [SourceCoordinates: RefoldedStep]) {
        let entries = messages
            .compactMap { try? ChangelogRecords.historyEntry(of: $0, as: DeliveryState.self) }
            .filter { Topics.generationBase(of: $0.place.inputTopic).base == Topics.deliveryInbox }
            .sorted {
                (InboxIndex.generation(of: $0.place.input), $0.place.lastOffset)
                    < (InboxIndex.generation(of: $1.place.input), $1.place.lastOffset)
            }
        var previous: DeliveryState?
        for entry in entries {
            let place = entry.place
            if case .some(let before) = entry.before {
                if byPosition[place.input] == nil { byPosition[place.input] = Change(before: before, after: entry.after, logTime: entry.logTime) }
                previous = entry.after
                continue
            }
            for offset in place.changed {
                let position = SourceCoordinates(topic: place.inputTopic, partition: place.inputPartition, offset: offset)
                guard byPosition[position] == nil else { continue }
                if let step = refolded[position] {
                    byPosition[position] = Change(before: step.before, after: step.after, logTime: step.logTime)
                } else if offset == place.lastOffset {
                    byPosition[position] = Change(before: previous, after: entry.after, logTime: entry.logTime)
                }
            }
            previous = entry.after
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
