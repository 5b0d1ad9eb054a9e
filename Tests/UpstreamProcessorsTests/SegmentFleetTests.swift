import FleetModel
import FleetSimulation
import Testing

/// 60 simulated days of power, regular and casual users (retention spec §2.1) through the whole
/// fleet — four upstream processors feeding the delivery engine — checked for the fleet-wide
/// invariants: the daily budget (P-BUD-1), quiet mode (P-LAP-3/5) and tiers once per lapse (P-LAP-6).
@Suite("Whole fleet over 60 days of segment traffic")
struct SegmentFleetTests {
    static func run(_ traffic: SegmentTraffic) throws -> [SimulationOutput] {
        var simulator = try Simulator.fleet(profile: .shipped("rin"))
        var outputs: [SimulationOutput] = []
        for line in traffic.jsonLines.split(separator: "\n") {
            outputs += try simulator.feed(line: line)
        }
        outputs += simulator.advance(to: traffic.start + .days(Int64(traffic.days)))
        return outputs
    }

    @Test("budget, quiet mode and tier invariants hold for every segment")
    func invariantsHold() throws {
        let traffic = SegmentTraffic()
        let outputs = try Self.run(traffic)
        let records = outputs.compactMap { output in
            output.record.map { OutputRecord(topic: output.topic, timestamp: output.at, record: $0) }
        }
        let violations = FleetInvariants(inputs: traffic.inputs).all(outputs: records)
        #expect(violations.isEmpty, "\(violations.prefix(10))")

        // The run is not vacuous: every segment got deliveries, every intent a final decision,
        // and the lapsed casual user entered quiet mode.
        let deliveries = records.compactMap { if case .delivery(let d) = $0.record { d } else { nil } }
        for segment in ["power", "regular", "casual"] {
            #expect(deliveries.contains { $0.userId.hasPrefix(segment) }, "no deliveries for \(segment) users")
        }
        let intents = Set(records.compactMap { if case .intent(let i) = $0.record { i.id } else { nil } })
        var finals: [String: Int] = [:]
        for case .decision(let d) in records.map(\.record) where d.outcome.isFinal {
            if let intentId = d.intentId { finals[intentId, default: 0] += 1 }
        }
        let decidedLater = intents.subtracting(finals.keys)
        #expect(finals.values.allSatisfy { $0 == 1 }, "an intent has more than one final decision")
        // Only intents still pending at the end of the run (a deferral or an open window) may lack one.
        #expect(decidedLater.count <= traffic.users.count, "\(decidedLater.count) intents never decided")
        let events = records.compactMap { if case .retentionEvent(let e) = $0.record { e.event } else { nil } }
        #expect(events.contains("retention.quiet_mode_entered"))
        #expect(deliveries.count > 50)
        #expect(!records.isEmpty && outputs.allSatisfy { $0.record != nil }, "a generated record was dead-lettered")
    }

    @Test("the same 60 days give byte-identical output")
    func deterministic() throws {
        let traffic = SegmentTraffic(seed: 7, usersPerSegment: 2, days: 30)
        #expect(try Self.run(traffic).map(\.jsonLine) == Self.run(traffic).map(\.jsonLine))
    }
}
