import FleetModel
import FleetSimulation
import Testing
import UpstreamProcessors

/// The changelog bytes of the upstream processors' states: `CanonicalJSONEncoder` must write
/// exactly what Foundation's `JSONEncoder` (sorted keys, unescaped slashes) writes, for every
/// state the score, sync, reminder and access processors reach over 60 days of segment traffic
/// through the whole fleet. Reminder schedules are enums with associated values, whose
/// synthesised encoding goes through nested containers.
@Suite("Upstream processor states encode as with JSONEncoder")
struct StateEncodingTests {
    struct Reached {
        var score: Set<ScoreState> = []
        var sync: Set<SyncState> = []
        var reminder: Set<ReminderState> = []
        var access: Set<AccessState> = []

        mutating func collect(_ stages: [any SimulationStage]) {
            for stage in stages {
                if let s = stage as? FoldStage<ScoreProcessor> { score.formUnion(s.fold.states.values) }
                if let s = stage as? FoldStage<SyncProcessor> { sync.formUnion(s.fold.states.values) }
                if let s = stage as? FoldStage<ReminderProcessor> { reminder.formUnion(s.fold.states.values) }
                if let s = stage as? FoldStage<AccessProcessor> { access.formUnion(s.fold.states.values) }
            }
        }
    }

    static func expectSameBytes<S: Encodable>(_ states: Set<S>, sourceLocation: SourceLocation = #_sourceLocation) {
        for state in states {
            let old = try? CanonicalJSONEncoder.foundationEncode(state)
            #expect(old != nil && (try? CanonicalJSONEncoder.encode(state)) == old,
                    "\(String(decoding: old ?? [], as: UTF8.self))", sourceLocation: sourceLocation)
        }
    }

    @Test("every state reached over segment traffic, three seeds")
    func statesAgree() throws {
        var reached = Reached()
        for seed: UInt64 in [1, 2, 3] {
            let traffic = SegmentTraffic(seed: seed, usersPerSegment: 3, days: 60)
            var simulator = try Simulator.fleet(profile: .shipped("rin"))
            for line in traffic.jsonLines.split(separator: "\n") {
                _ = try simulator.feed(line: line)
                reached.collect(simulator.stages)
            }
            _ = simulator.advance(to: traffic.start + .days(Int64(traffic.days)))
            reached.collect(simulator.stages)
        }
        Self.expectSameBytes(reached.score)
        Self.expectSameBytes(reached.sync)
        Self.expectSameBytes(reached.reminder)
        Self.expectSameBytes(reached.access)
        // Not vacuous: each processor reached many distinct states.
        #expect(reached.score.count > 100 && reached.sync.count > 100 && reached.reminder.count > 20 && reached.access.count > 10,
                "score \(reached.score.count), sync \(reached.sync.count), reminder \(reached.reminder.count), access \(reached.access.count)")
        #expect(reached.score.count + reached.sync.count + reached.reminder.count + reached.access.count > 1000)
    }
}
