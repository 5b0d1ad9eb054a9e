import DeliveryPolicy
import FleetModel
import Foundation

/// Drives `DeliveryEngine` over JSONL input the way the runtime and `fleetctl simulate` do:
/// partition time is the largest `at` seen; before each line every timer due at or before it
/// fires in time order (ties by user id) with `context.now` = the timer's time and ids from the
/// line that made it due; ids are `rin.delivery.inbox:0:<line>:<index>`, the index running on
/// across the timers and the line itself.
///
/// Input lines: `{"at": "...", "topic"?: "...", "key"?: "...", "value": {...}}`. To keep
/// fixtures short, `value` may leave out `v` (1), `id` (`r<line>`), `user_id` (the key, else
/// `u1`), and for intents `data` ({}) and `source`.
struct EngineDriver {
    let engine: DeliveryEngine
    private(set) var states: [String: DeliveryState] = [:]
    private(set) var time: Timestamp?
    private(set) var line = 0
    private(set) var outputs: [OutputRecord] = []
    private(set) var errors: [String] = []

    init(profile: PolicyProfile) {
        engine = DeliveryEngine(profile: profile)
    }

    init(_ profileName: String = "rin") throws {
        self.init(profile: try PolicyProfile.shipped(profileName))
    }

    /// Feeds every non-empty line of `jsonl`.
    mutating func feed(_ jsonl: String) throws {
        for text in jsonl.split(separator: "\n") where !text.trimmingCharacters(in: .whitespaces).isEmpty {
            try feedLine(String(text))
        }
    }

    /// Fires every timer due by `until`. No record makes these due, so their ids come from the
    /// pseudo-position `until:0:0` (a runtime would have appended a tick).
    mutating func run(until text: String) throws {
        guard let until = Timestamp(rfc3339: text) else { throw DriverError("bad time \(text)") }
        var ids = OutputIDs(origin: SourceCoordinates(topic: "until", partition: 0, offset: 0))
        fireTimers(through: until, ids: &ids)
        time = max(time ?? until, until)
    }

    mutating func feedLine(_ text: String) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let atText = object["at"] as? String, let at = Timestamp(rfc3339: atText),
              var value = object["value"] as? [String: Any]
        else { throw DriverError("line \(line): needs at and value: \(text)") }
        let topic = object["topic"] as? String ?? Topics.deliveryInbox
        let type = value["type"] as? String ?? ""
        let key = object["key"] as? String ?? value["user_id"] as? String ?? (type == "tick" ? "" : "u1")
        if value["v"] == nil { value["v"] = 1 }
        if value["id"] == nil { value["id"] = "r\(line)" }
        if value["user_id"] == nil { value["user_id"] = key }
        if type == "intent" {
            if value["data"] == nil { value["data"] = [String: Any]() }
            if value["source"] == nil { value["source"] = ["topic": "rin.upstream", "partition": 0, "offset": line] }
        }
        let bytes = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        let offset = (object["offset"] as? Int).map(Int64.init)
        let record: FleetRecord
        do {
            record = try RecordCodec.decode(bytes, topic: topic)
        } catch {
            errors.append("\(atText) \(error.message)")
            advance(to: at, offset: offset)
            return
        }
        feed(record, at: at, key: key, offset: offset)
    }

    /// Feeds one decoded record at `at` (log offset `offset`, else the next line number).
    mutating func feed(_ record: FleetRecord, at: Timestamp, key: String? = nil, offset pinned: Int64? = nil) {
        let ids = advance(to: at, offset: pinned)
        let key = key ?? record.userId
        guard !key.isEmpty else { return }  // ticks only advance time
        let now = time ?? at
        var state = states[key] ?? engine.initialState(userId: key)
        var context = ProcessingContext(now: now, userId: key, ids: ids)
        do {
            try engine.process(record, state: &state, context: &context)
        } catch {
            errors.append("\(at.rfc3339) \(error.message)")
            return
        }
        states[key] = state
        outputs += context.outputs
    }

    /// Moves partition time to `at` (never back) and fires the timers due by then.
    @discardableResult
    private mutating func advance(to at: Timestamp, offset pinned: Int64?) -> OutputIDs {
        let now = max(time ?? at, at)
        time = now
        // A pinned offset is the record's log position (a re-sent copy lives at a new offset).
        let offset = pinned ?? Int64(line)
        var ids = OutputIDs(origin: SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: offset))
        line += 1
        fireTimers(through: now, ids: &ids)
        return ids
    }

    private mutating func fireTimers(through limit: Timestamp, ids: inout OutputIDs) {
        while let (user, due) = nextDue(), due <= limit {
            var state = states[user] ?? engine.initialState(userId: user)
            var context = ProcessingContext(now: due, userId: user, ids: ids)
            engine.fireTimers(state: &state, context: &context)
            ids = context.ids
            states[user] = state
            outputs += context.outputs
        }
    }

    private func nextDue() -> (String, Timestamp)? {
        var best: (String, Timestamp)?
        for (user, state) in states {
            guard let due = engine.nextWakeUp(state) else { continue }
            if let current = best, (current.1, current.0) <= (due, user) { continue }
            best = (user, due)
        }
        return best
    }

    /// Replaces a user's state, as the runtime does when it restores from the changelog.
    mutating func restore(_ user: String, _ state: DeliveryState) { states[user] = state }

    /// Writes every state to bytes and reads it back, as a restart restores from the changelog.
    /// Returns false when a state does not survive the round trip unchanged.
    mutating func roundTripStates() throws -> Bool {
        var same = true
        for (user, state) in states {
            let restored = try DeliveryState(serialized: state.serialized())
            same = same && restored == state
            states[user] = restored
        }
        return same
    }

    // MARK: Reading the output

    /// Every output as the JSONL `fleetctl simulate` prints.
    var jsonl: [String] {
        outputs.map { o in
            "{\"at\":\"\(o.timestamp.rfc3339)\",\"topic\":\"\(o.topic)\",\"key\":\"\(o.key)\",\"value\":\(RecordCodec.encodeString(o.record))}"
        }
    }

    /// One readable line per output: time, then what it is.
    var summary: [String] {
        outputs.map { o in
            let at = o.timestamp.rfc3339
            switch o.record {
            case .delivery(let d):
                return "\(at) \(d.channel == .email ? "email" : "push") \(d.notification) \"\(d.body)\" \(d.deepLink) [\(d.mergedIntents.joined(separator: ","))]"
            case .decision(let d):
                var text = "\(at) \(d.intentId) \(d.outcome.rawValue) \(d.reason ?? "-") \(d.rule)"
                if let until = d.until { text += " until \(until.rfc3339)" }
                return text
            case .sectionItem(let s):
                let body = s.item["body"]?.stringValue.map { " \"\($0)\"" } ?? ""
                let lines = s.item["lines"]?.arrayValue.map { " " + $0.compactMap(\.stringValue).joined(separator: " | ") } ?? ""
                return "\(at) section \(s.section) \(s.itemId)\(body)\(lines)"
            case .retentionEvent(let e):
                let props = e.properties.keys.sorted().map { "\($0)=\(Self.text(e.properties[$0] ?? .null))" }.joined(separator: " ")
                return "\(at) event \(e.event) \(props)"
            default:
                return "\(at) \(o.record.type)"
            }
        }
    }

    /// Summary lines of deliveries and decisions only.
    var decisions: [String] {
        zip(outputs, summary).filter {
            if case .delivery = $0.0.record { return true }
            if case .decision = $0.0.record { return true }
            return false
        }.map(\.1)
    }

    private static func text(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): String(b)
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .string(let s): s
        case .array(let a): "[" + a.map(text).joined(separator: ",") + "]"
        case .object: "{…}"
        }
    }
}

struct DriverError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension EngineDriver {
    /// Runs `input` from a fresh state, then advances to `until`.
    static func run(_ input: String, until: String? = nil, profile: PolicyProfile? = nil) throws -> EngineDriver {
        var driver = try profile.map(EngineDriver.init(profile:)) ?? EngineDriver()
        try driver.feed(input)
        if let until { try driver.run(until: until) }
        return driver
    }
}
