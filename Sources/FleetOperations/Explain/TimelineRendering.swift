import FleetModel
import Foundation

/// How `fleetctl explain` prints a `UserTimeline`: a text report for people, one JSON document
/// for tools. Both carry the same steps and chains.
public enum TimelineRendering {
    // MARK: Text

    /// The report an on-call engineer reads: a header, the timeline (one block per step: the
    /// record, then what it produced and how the state changed), then one chain per intent.
    public static func text(_ timeline: UserTimeline) -> String {
        var lines: [String] = []
        let range = switch (timeline.window.since, timeline.window.until) {
        case (nil, nil): "all retained records"
        case (let since?, nil): "from \(since.rfc3339)"
        case (nil, let until?): "until \(until.rfc3339)"
        case (let since?, let until?): "from \(since.rfc3339) until \(until.rfc3339)"
        }
        let logs = timeline.generations.isEmpty
            ? "\(Topics.deliveryInbox) partition \(timeline.partition) of \(timeline.partitionCount)"
            : timeline.generations.map { "\($0.topic) partition \($0.partition) of \($0.partitionCount)" }.joined(separator: ", ")
        lines.append("user \(timeline.userId): \(logs), \(range), profile \(timeline.profileName)")
        if let line = senderTopicsLine(timeline.sends) { lines.append(line) }
        guard !timeline.isEmpty else {
            lines.append("no records for user \(timeline.userId) in this range")
            return lines.joined(separator: "\n") + "\n"
        }
        let notifications = Dictionary(
            timeline.chains.compactMap { chain in chain.intent.map { (chain.intentId, $0.notification) } },
            uniquingKeysWith: { first, _ in first })

        lines.append("")
        lines.append("TIMELINE (log time, inbox position, record; then what the step did for this user)")
        for step in timeline.steps {
            lines.append("\(step.at.rfc3339)  \(position(step.inbox))  \(describe(step.input))")
            for output in step.outputs { lines.append("    " + describe(output, notifications: notifications)) }
            for change in step.stateChanges { lines.append("    state      " + change.text) }
        }

        lines.append("")
        lines.append("INTENTS (each intent's chain: arrival, every decision, what was delivered, the state the rule read)")
        for chain in timeline.chains {
            var head = chain.intentId
            if let intent = chain.intent {
                head += "  \(intent.notification) (\(intent.category)), from \(intent.source)"
            }
            head += " -> " + (chain.finalOutcome?.rawValue ?? "no final decision yet")
            lines.append(head)
            if let at = chain.arrivedAt {
                lines.append("    \(at.rfc3339)  arrived at \(position(chain.arrival))")
            } else {
                lines.append("    arrival not retained")
            }
            for link in chain.links {
                // A decision on a notification the engine made from the intent names what it was.
                let subject = link.decision.kind.map { "\($0.rawValue) \(link.decision.notificationId ?? "?") " } ?? ""
                var line = "    \(link.at.rfc3339)  \(subject)\(verdict(link.decision)) at \(position(link.step))"
                if link.firedByTimer { line += " (timer fired by \(cause(link.input)))" }
                if let delivery = link.delivery { line += ", delivered as \(delivery.notificationId): \(copy(delivery))" }
                lines.append(line)
                for fact in link.state { lines.append("                          state: \(fact.text)") }
                if let sends = timeline.sends, let delivery = link.delivery {
                    lines += sendLines(sends, delivery, indent: "                          send: ")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func position(_ coordinates: SourceCoordinates?) -> String {
        guard let coordinates else { return "inbox[?]" }
        // Generation 1 is plain `inbox`; a later generation's log is named with its suffix.
        let generation = Topics.generationBase(of: coordinates.topic).generation
        let log = generation > 1 ? "inbox.g\(generation)" : "inbox"
        return "\(log)[\(coordinates.partition)]@\(coordinates.offset)"
    }

    private static func describe(_ input: StepInput) -> String {
        switch input {
        case .record(.intent(let intent), let origin):
            var text = "intent \(intent.id) arrived: \(intent.notification) (\(intent.category)), from \(intent.source)"
            if !intent.data.isEmpty { text += ", data \(json(.object(intent.data)))" }
            if let expires = intent.expiresAt { text += ", expires \(expires.rfc3339)" }
            if let origin, origin != intent.source { text += ", written by the step at \(origin)" }
            return text
        case .record(let record, let origin):
            var text = "\(record.type) \(record.id)"
            let fields = recordJSON(record).objectValue?.filter { !["v", "type", "id", "user_id"].contains($0.key) } ?? [:]
            if !fields.isEmpty { text += " \(json(.object(fields)))" }
            if let origin { text += ", from \(origin)" }
            return text
        case .tick(let id): return "tick \(id): log time moved, this user's timers fired"
        case .otherUser(let type): return "another user's \(type): log time moved, this user's timers fired"
        case .missing(let detail): return detail
        }
    }

    private static func cause(_ input: StepInput) -> String {
        switch input {
        case .record(let record, _): "\(record.type) \(record.id)"
        case .tick(let id): "tick \(id)"
        case .otherUser(let type): "another user's \(type)"
        case .missing: "a record no longer retained"
        }
    }

    private static func describe(_ output: StepOutput, notifications: [String: String]) -> String {
        switch output.record {
        case .decision(let decision):
            guard let intentId = decision.intentId else {
                // A notification the engine made itself: its kind and id, then the verdict.
                return "decision   \(decision.kind?.rawValue ?? "notification") \(decision.notificationId ?? "?") \(verdict(decision))"
            }
            let what = notifications[intentId].map { "\(intentId) \($0)" } ?? intentId
            var text = "decision   \(what) \(verdict(decision))"
            if let id = decision.notificationId { text += ", notification \(id)" }
            return text
        case .delivery(let delivery):
            var text = "delivery   \(delivery.notificationId) \(delivery.channel.rawValue) \(delivery.notification): \(copy(delivery))"
            if delivery.mergedIntents.count > 1 { text += ", merges \(delivery.mergedIntents.joined(separator: ", "))" }
            return text
        case .sectionItem(let item):
            var text = "section    \(item.section) item \(item.itemId)"
            if let reason = item.item["reason"]?.stringValue { text += " (\(reason))" }
            return text
        case .retentionEvent(let event):
            return "event      \(event.event)" + (event.properties.isEmpty ? "" : " \(json(.object(event.properties)))")
        default:
            return "\(output.topic) \(output.record.type) \(output.record.id)"
        }
    }

    /// `suppressed: daily_budget (P-BUD-1)`, `deferred until … : quiet_hours (P-DND-1)`.
    private static func verdict(_ decision: Decision) -> String {
        var text = decision.outcome.rawValue
        if let until = decision.until { text += " until \(until.rfc3339)" }
        text += ": \(decision.reason ?? "no reason given") (\(decision.rule))"
        return text
    }

    private static func copy(_ delivery: Delivery) -> String {
        "\"\(delivery.title)\" — \"\(delivery.body)\""
    }

    // MARK: JSON

    /// One JSON document (canonical: sorted keys, no insignificant space, one line):
    ///
    ///     {"user", "partition", "partitions", "logs": [{"generation", "topic", "partition", "partitions"}],
    ///      "profile", "since", "until",
    ///      "steps": [{"at", "inbox": {topic, partition, offset} | null, "fired_timers",
    ///                 "input": {"kind": record|tick|other_user|missing, "record"?, "origin"?, "tick_id"?, "type"?, "detail"?},
    ///                 "outputs": [{"at", "topic", "record"}], "state_changes": [{"key", "before", "after"}]}],
    ///      "intents": [{"intent_id", "intent", "arrival", "arrived_at", "final_outcome",
    ///                   "links": [{"at", "step", "fired_by_timer", "decision", "delivery", "state": [{"key", "text"}],
    ///                              "sends": {"progress", "attempts", "receipts"} | null}]}],
    ///      "sender_missing_topics": [topic] | null}
    ///
    /// Records appear in their wire format (the fields of DESIGN.md "Topics and records"); a link
    /// about the digest an intent went into has a decision with `kind` and no `intent_id`. A link
    /// with a delivery has its `sends` (`sendsJSON`) when the sender's topics were read.
    public static func json(_ timeline: UserTimeline) -> String {
        let document: JSONValue = .object([
            "user": .string(timeline.userId),
            "partition": .int(Int64(timeline.partition)),
            "partitions": .int(Int64(timeline.partitionCount)),
            "logs": .array(timeline.generations.map { log in
                .object([
                    "generation": .int(Int64(log.generation)), "topic": .string(log.topic),
                    "partition": .int(Int64(log.partition)), "partitions": .int(Int64(log.partitionCount)),
                ])
            }),
            "profile": .string(timeline.profileName),
            "since": timeline.window.since.map { .string($0.rfc3339) } ?? .null,
            "until": timeline.window.until.map { .string($0.rfc3339) } ?? .null,
            "steps": .array(timeline.steps.map(stepJSON)),
            "intents": .array(timeline.chains.map { chainJSON($0, sends: timeline.sends) }),
            "sender_missing_topics": timeline.sends.map { .array($0.missingTopics.map(JSONValue.string)) } ?? .null,
        ])
        return json(document) + "\n"
    }

    private static func stepJSON(_ step: TimelineStep) -> JSONValue {
        .object([
            "at": .string(step.at.rfc3339),
            "inbox": coordinatesJSON(step.inbox),
            "fired_timers": .bool(step.input.firedTimers),
            "input": inputJSON(step.input),
            "outputs": .array(step.outputs.map { output in
                .object(["at": .string(output.at.rfc3339), "topic": .string(output.topic), "record": recordJSON(output.record)])
            }),
            "state_changes": .array(step.stateChanges.map { change in
                .object([
                    "key": .string(change.key),
                    "before": change.before.map(JSONValue.string) ?? .null,
                    "after": change.after.map(JSONValue.string) ?? .null,
                ])
            }),
        ])
    }

    private static func inputJSON(_ input: StepInput) -> JSONValue {
        switch input {
        case .record(let record, let origin):
            .object(["kind": "record", "record": recordJSON(record), "origin": coordinatesJSON(origin)])
        case .tick(let id): .object(["kind": "tick", "tick_id": .string(id)])
        case .otherUser(let type): .object(["kind": "other_user", "type": .string(type)])
        case .missing(let detail): .object(["kind": "missing", "detail": .string(detail)])
        }
    }

    private static func chainJSON(_ chain: IntentChain, sends: SendTrail?) -> JSONValue {
        .object([
            "intent_id": .string(chain.intentId),
            "intent": chain.intent.map { recordJSON(.intent($0)) } ?? .null,
            "arrival": coordinatesJSON(chain.arrival),
            "arrived_at": chain.arrivedAt.map { .string($0.rfc3339) } ?? .null,
            "final_outcome": chain.finalOutcome.map { .string($0.rawValue) } ?? .null,
            "links": .array(chain.links.map { link in
                .object([
                    "at": .string(link.at.rfc3339),
                    "step": coordinatesJSON(link.step),
                    "fired_by_timer": .bool(link.firedByTimer),
                    "decision": recordJSON(.decision(link.decision)),
                    "delivery": link.delivery.map { recordJSON(.delivery($0)) } ?? .null,
                    "state": .array(link.state.map { .object(["key": .string($0.key), "text": .string($0.text)]) }),
                    "sends": link.delivery.flatMap { delivery in sends.map { sendsJSON($0, delivery) } } ?? .null,
                ])
            }),
        ])
    }

    private static func coordinatesJSON(_ coordinates: SourceCoordinates?) -> JSONValue {
        guard let coordinates else { return .null }
        return .object([
            "topic": .string(coordinates.topic), "partition": .int(Int64(coordinates.partition)),
            "offset": .int(coordinates.offset),
        ])
    }

    /// A record as its wire JSON.
    static func recordJSON(_ record: FleetRecord) -> JSONValue {
        (try? JSONDecoder().decode(JSONValue.self, from: Data(RecordCodec.encode(record)))) ?? .null
    }

    private static func json(_ value: JSONValue) -> String {
        // JSONValue holds only finite numbers read from records, which always encode.
        String(decoding: (try? CanonicalJSONEncoder.encode(value)) ?? Array("null".utf8), as: UTF8.self)
    }
}
