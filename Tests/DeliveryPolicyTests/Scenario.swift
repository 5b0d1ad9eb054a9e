import DeliveryPolicy
import FleetModel
import FleetSimulation
import Foundation

/// A scenario run through the FleetSimulation `Simulator`: the code `fleetctl simulate` runs,
/// so timer order, log time and output ids (derived from the emulated logs as the runtime
/// derives them) are the simulator's, never re-implemented here.
///
/// The one thing this adds is fixture shorthand (`FixtureLine`): a line may leave out what
/// every fixture would repeat; it is completed into a full input line and handed to
/// `Simulator.feed(line:)`. `run(until:)` is `--until` (`Simulator.advance(to:)`).
struct Scenario {
    private(set) var simulator: Simulator
    /// Every output in the order produced, dead letters included.
    private(set) var outputs: [SimulationOutput] = []
    /// Fixture lines completed so far; numbers the default ids.
    private var fixtureLines = 0
    private let makeSimulator: @Sendable () throws -> Simulator

    /// The delivery worker alone, as a fleet of one stage, with `profile`.
    init(profile: PolicyProfile) throws {
        makeSimulator = { try Self.deliveryOnly(profile) }
        simulator = try makeSimulator()
    }

    /// The delivery worker alone with a shipped profile.
    init(_ profileName: String = "rin") throws {
        try self.init(profile: try PolicyProfile.shipped(profileName))
    }

    /// A simulator whose only stage is the delivery worker.
    static func deliveryOnly(_ profile: PolicyProfile) throws -> Simulator {
        try Simulator(stages: [
            FoldStage(worker: .delivery, processor: DeliveryEngine(profile: profile), zone: { $0.timeZone })
        ])
    }

    /// Completes and feeds every non-blank fixture line of `jsonl`.
    mutating func feed(_ jsonl: String) throws {
        for text in jsonl.split(separator: "\n") where !text.allSatisfy(\.isWhitespace) {
            let line = try FixtureLine.complete(String(text), number: fixtureLines)
            fixtureLines += 1
            outputs += try simulator.feed(line: line)
        }
    }

    /// Feeds one input as it is.
    mutating func feed(_ input: SimulationInput) throws {
        outputs += try simulator.feed(input)
    }

    /// `--until`: lets time pass to `text`, firing every timer due on the way.
    mutating func run(until text: String) throws {
        guard let until = Timestamp(rfc3339: text) else { throw FixtureError("bad time \(text)") }
        advance(to: until)
    }

    mutating func advance(to time: Timestamp) {
        outputs += simulator.advance(to: time)
    }

    /// Writes the whole simulation (every stage's user states, log ends, time) to JSON and
    /// resumes from those bytes in a new simulator, as a restarted process would. Returns
    /// whether every delivery state came back equal to the one written.
    @discardableResult
    mutating func restart() throws -> Bool {
        let before = deliveryStates
        let bytes = try JSONEncoder().encode(simulator.snapshot())
        var fresh = try makeSimulator()
        try fresh.restore(try JSONDecoder().decode(SimulatorSnapshot.self, from: bytes))
        simulator = fresh
        return deliveryStates == before
    }

    /// The delivery worker's user states.
    var deliveryStates: [String: DeliveryState] {
        for stage in simulator.stages {
            if let delivery = stage as? FoldStage<DeliveryEngine> { return delivery.fold.states }
        }
        return [:]
    }

    // MARK: Reading the output

    /// The records produced, dead letters left out.
    var records: [(at: Timestamp, topic: String, record: FleetRecord)] {
        outputs.compactMap { o in o.record.map { (o.at, o.topic, $0) } }
    }

    /// Every output as the JSONL `fleetctl simulate` prints, dead letters included.
    var jsonl: [String] { outputs.map(\.jsonLine) }

    /// Each dead letter as `<at> <error>`.
    var errors: [String] {
        outputs.compactMap { o in
            if case .deadLetter(let letter) = o.value { return "\(o.at.rfc3339) \(letter.error)" }
            return nil
        }
    }

    /// One readable line per record: time, then what it is.
    var summary: [String] { records.map(Self.describe) }

    /// Summary lines of deliveries and decisions only.
    var decisions: [String] {
        records.filter {
            if case .delivery = $0.record { return true }
            if case .decision = $0.record { return true }
            return false
        }.map(Self.describe)
    }

    private static func describe(_ output: (at: Timestamp, topic: String, record: FleetRecord)) -> String {
        let at = output.at.rfc3339
        switch output.record {
        case .delivery(let d):
            return "\(at) \(d.channel == .email ? "email" : "push") \(d.notification) \"\(d.body)\" \(d.deepLink) [\(d.mergedIntents.joined(separator: ","))]"
        case .decision(let d):
            // An engine-made notification's decision: its kind and id where an intent's has the intent id.
            let subject = d.intentId ?? "\(d.kind?.rawValue ?? "?") \(d.notificationId ?? "?")"
            var text = "\(at) \(subject) \(d.outcome.rawValue) \(d.reason ?? "-") \(d.rule)"
            if let until = d.until { text += " until \(until.rfc3339)" }
            return text
        case .sectionItem(let s):
            let body = s.item["body"]?.stringValue.map { " \"\($0)\"" } ?? ""
            let lines = s.item["lines"]?.arrayValue.map { " " + $0.compactMap(\.stringValue).joined(separator: " | ") } ?? ""
            return "\(at) section \(s.section) \(s.itemId)\(body)\(lines)"
        case .retentionEvent(let e):
            let props = e.properties.keys.sorted().map { "\($0)=\(text(e.properties[$0] ?? .null))" }.joined(separator: " ")
            return "\(at) event \(e.event) \(props)"
        default:
            return "\(at) \(output.record.type)"
        }
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

extension Scenario {
    /// Runs fixture `input` on a fresh delivery worker, then advances to `until`.
    static func run(_ input: String, until: String? = nil, profile: PolicyProfile? = nil) throws -> Scenario {
        var scenario = try profile.map(Scenario.init(profile:)) ?? Scenario()
        try scenario.feed(input)
        if let until { try scenario.run(until: until) }
        return scenario
    }
}

/// Fixture shorthand, completed into a `fleetctl simulate` input line.
///
/// A fixture line is `{"at": "...", "topic"?: "...", "key"?: "...", "value": {...}}`: `topic`
/// defaults to `rin.delivery.inbox`, `key` to the value's `user_id`, else `u1` (a `tick` has
/// none), and `value` may leave out `v` (1), `id` (`r<n>`, n the 0-based fixture line),
/// `user_id` (the key), and for intents `data` ({}) and `source`
/// (`rin.upstream:0:<n>`). Nothing else is touched: a record wrong in any other way reaches
/// the simulator as written and is dead-lettered there.
enum FixtureLine {
    static func complete(_ text: String, number: Int) throws -> String {
        guard case .object(let line)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)),
              case .string(let at)? = line["at"], case .object(var value)? = line["value"]
        else { throw FixtureError("fixture line \(number): needs at and value: \(text)") }
        let topic = line["topic"]?.stringValue ?? Topics.deliveryInbox
        let type = value["type"]?.stringValue ?? ""
        let key = line["key"]?.stringValue ?? value["user_id"]?.stringValue ?? (type == "tick" ? nil : "u1")
        if value["v"] == nil { value["v"] = 1 }
        if value["id"] == nil { value["id"] = .string("r\(number)") }
        if value["user_id"] == nil { value["user_id"] = .string(key ?? "") }
        if type == "intent" {
            if value["data"] == nil { value["data"] = .object([:]) }
            if value["source"] == nil {
                value["source"] = ["topic": "rin.upstream", "partition": 0, "offset": .int(Int64(number))]
            }
        }
        var envelope: JSONObject = ["at": .string(at), "topic": .string(topic), "value": .object(value)]
        if let key { envelope["key"] = .string(key) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(JSONValue.object(envelope)), as: UTF8.self)
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
