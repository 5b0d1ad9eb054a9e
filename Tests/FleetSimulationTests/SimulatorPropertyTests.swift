import FleetModel
import FleetSimulation
import Foundation
import PropertyBased
import Testing

/// Random JSONL traffic for the toy fleet: scores (some invalid or refused), sign-ups in a few
/// zones, reminders set and cancelled, held and immediate intents, ticks, and broken records.
enum Traffic {
    static let zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
    static let start = Timestamp(rfc3339: "2026-03-28T20:00:00Z")!  // the EU DST change is in range

    static let line = zip(Gen.int(in: 0...9), Gen.int(in: 0...2), Gen.int(in: 0...240), Gen.int(in: 0...120))

    /// A file of `count` lines; `dt` minutes pass before each (so `at` never decreases).
    static let files = line.array(of: 0...24).map { specs -> [String] in
        var time = start
        var lines: [String] = []
        for (index, (kind, userNumber, dt, param)) in specs.enumerated() {
            time = time + .minutes(Int64(dt))
            let at = time.rfc3339, user = "u\(userNumber)", id = "e\(index)"
            switch kind {
            case 0, 1:
                lines.append(Lines.score(at, user, param % 102, id: id))
            case 2:
                lines.append(Lines.signup(at, user, zone: zones[param % zones.count], id: id))
            case 3:
                let zoneName = zones[param % zones.count]
                let local = Zone(identifier: zoneName)!.localDateTime(at: time + .minutes(Int64(param)))
                lines.append(Lines.reminder(at, user, reminder: "r\(param % 3)", local: local.description, zone: zoneName, id: id))
            case 4:
                lines.append(Lines.cancel(at, user, reminder: "r\(param % 3)", id: id))
            case 5, 6:
                lines.append(Lines.intent(at, user, holdMinutes: param.isMultiple(of: 3) ? nil : param, id: id))
            case 7:
                lines.append(Lines.tick(at, id: id))
            case 8:
                lines.append(#"{"at":"\#(at)","topic":"rin.app.activity","key":"\#(user)","value":{"v":1,"type":"app.opened","id":"\#(id)"}}"#)
            default:
                lines.append("")
            }
        }
        return lines
    }

    static func until(_ lines: [String]) -> Timestamp {
        let last = lines.compactMap { line -> Timestamp? in
            guard let input = try? SimulationInput.parse(line, line: 1) else { return nil }
            return input.at
        }.last ?? start
        return last + .hours(3)
    }
}

/// Runs lines through a simulator, collecting the printed output.
struct Session {
    var simulator: Simulator
    var printed: [String] = []

    mutating func feed(_ lines: some Sequence<String>) throws {
        for line in lines { printed += try simulator.feed(line: line).map(\.jsonLine) }
    }

    mutating func finish(until: Timestamp) {
        printed += simulator.advance(to: until).map(\.jsonLine)
    }

    /// The simulator state through its Codable form, as a test would store it between runs.
    func resumed() throws -> Session {
        let data = try JSONEncoder().encode(simulator.snapshot())
        var fresh = try toyFleet()
        try fresh.restore(JSONDecoder().decode(SimulatorSnapshot.self, from: data))
        return Session(simulator: fresh)
    }
}

@Suite struct SimulatorPropertyTests {
    @Test func theSameInputAlwaysGivesByteIdenticalOutput() async throws {
        await propertyCheck(count: 1000, input: Traffic.files) { lines in
            let text = lines.joined(separator: "\n")
            let one = try SimulationRun.run(text, simulator: toyFleet(), until: Traffic.until(lines))
            let two = try SimulationRun.run(text, simulator: toyFleet(), until: Traffic.until(lines))
            #expect(one == two)
        }
    }

    @Test func splittingARunAndResumingFromTheSnapshotEqualsOneRun() async throws {
        await propertyCheck(count: 1000, input: Traffic.files, Gen.int(in: 0...24)) { lines, cut in
            let split = min(cut, lines.count)
            var whole = Session(simulator: try toyFleet())
            try whole.feed(lines)
            whole.finish(until: Traffic.until(lines))

            var first = Session(simulator: try toyFleet())
            try first.feed(lines[..<split])
            var second = try first.resumed()
            try second.feed(lines[split...])
            second.finish(until: Traffic.until(lines))
            #expect(first.printed + second.printed == whole.printed)
            #expect(second.simulator.snapshot() == whole.simulator.snapshot())
        }
    }

    // DESIGN principle 3: re-processing a tail from the last snapshot (a crash before the
    // commit) changes nothing: the retried part repeats exactly and the rest follows as in one run.
    @Test func processingATailTwiceFromASnapshotChangesNothing() async throws {
        await propertyCheck(count: 1000, input: Traffic.files, Gen.int(in: 0...24), Gen.int(in: 0...24)) { lines, a, b in
            let committed = min(a, b, lines.count), crashed = min(max(a, b), lines.count)
            var whole = Session(simulator: try toyFleet())
            try whole.feed(lines)

            var run = Session(simulator: try toyFleet())
            try run.feed(lines[..<committed])
            var lost = try run.resumed()
            try lost.feed(lines[committed..<crashed])
            var retried = try run.resumed()
            try retried.feed(lines[committed...])
            #expect(Array(retried.printed.prefix(lost.printed.count)) == lost.printed)
            #expect(run.printed + retried.printed == whole.printed)
        }
    }

    @Test func everyIntentGetsOneFinalDecisionAndIdsAreUnique() async throws {
        await propertyCheck(count: 1000, input: Traffic.files) { lines in
            try Self.checkDecisionsAndIds(lines)
        }
    }

    /// Kept out of the property closure: Swift 6.3.1's region-based isolation checker crashes on
    /// this body inside the async closure.
    static func checkDecisionsAndIds(_ lines: [String]) throws {
        var session = Session(simulator: try toyFleet())
        var outputs: [SimulationOutput] = []
        for line in lines { outputs += try session.simulator.feed(line: line) }
        outputs += session.simulator.advance(to: Traffic.until(lines) + .days(2))
        let records = outputs.compactMap(\.record)
        let ids = records.map(\.id)
        #expect(Set(ids).count == ids.count)
        var finals: [String: Int] = [:]
        for case .decision(let decision) in records where decision.outcome.isFinal {
            if let intentId = decision.intentId { finals[intentId, default: 0] += 1 }
        }
        // Intents the delivery stage accepted: those on the inbox (from lines or stages) not dead-lettered there.
        let refused = Set(outputs.compactMap { output -> String? in
            guard case .deadLetter(let letter) = output.value, output.topic == "rin.delivery.inbox.dlq" else { return nil }
            return letter.record["id"]?.stringValue
        })
        var intents = Set(records.compactMap { record -> String? in
            if case .intent(let intent) = record { intent.id } else { nil }
        })
        for line in lines {
            if let input = try SimulationInput.parse(line, line: 1), input.value["type"] == "intent",
               let id = input.value["id"]?.stringValue { intents.insert(id) }
        }
        intents.subtract(refused)
        #expect(Set(finals.keys) == intents)
        #expect(finals.values.allSatisfy { $0 == 1 })
    }
}
