import FleetModel
import FleetSimulation
import Foundation
import Testing

// `fleetctl simulate`'s core (SimulationRun / Simulator) over the toy fleet.

@Suite struct SimulatorTests {
    /// Routing, ids, ties and inbox echo on one small file, checked byte for byte.
    @Test func aSmallFileGivesTheExpectedRecordsInTheOrderProduced() throws {
        let input = [
            Lines.signup("2026-03-02T07:00:00Z", "u1", zone: "Europe/Berlin", id: "a1"),
            Lines.score("2026-03-02T07:30:00Z", "u1", 72, id: "s1"),
            Lines.reminder("2026-03-02T08:00:00Z", "u1", reminder: "r1", local: "2026-03-02T10:00", zone: "Europe/Berlin", id: "m1"),
            Lines.intent("2026-03-02T08:00:00Z", "u1", holdMinutes: 60, id: "i1"),
            "",
            Lines.score("2026-03-02T09:30:00Z", "u1", 80, id: "s2"),
        ].joined(separator: "\n")
        let output = try SimulationRun.run(input, simulator: toyFleet())
        let expected = [
            // The score worker's intent is printed, then folded by the delivery stage. It sits at
            // inbox offset 1 (offset 0 holds the forwarded sign-up), but its ids derive from its
            // origin: the score step at rin.score.batches:0:0, of which it is output 0.
            #"{"at":"2026-03-02T07:30:00Z","topic":"rin.delivery.inbox","key":"u1","value":{"category":"score","data":{"new":72},"id":"rin.score.batches:0:0:0","notification":"score.updated","source":{"offset":0,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T07:30:00Z","topic":"rin.notify.deliveries","key":"u1","value":{"body":"","category":"score","channel":"push","deep_link":"rin://home","id":"rin.score.batches:0:0:0:0","merged_intents":["rin.score.batches:0:0:0"],"notification":"score.updated","notification_id":"rin.score.batches:0:0:0:0","title":"score.updated","type":"delivery","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T07:30:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.score.batches:0:0:0:1","intent_id":"rin.score.batches:0:0:0","notification_id":"rin.score.batches:0:0:0:0","outcome":"delivered","rule":"P-TOY-1","type":"decision","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T08:00:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.delivery.inbox:0:2:0","intent_id":"i1","outcome":"deferred","reason":"hold","rule":"P-TOY-1","type":"decision","until":"2026-03-02T09:00:00Z","user_id":"u1","v":1}}"#,
            // 09:00Z: the reminder (10:00 Berlin) and the held intent are due together. The
            // reminder stage fires first; its intent reaches the delivery stage at 09:00, which
            // first fires its own 09:00 timer (delivering i1), then takes the reminder's intent,
            // all in one step with the ids of that intent's origin (the reminder's timer step at
            // rin.reminder.inbox:0:1, output 0): the forwarded reminder took offset 0.
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.delivery.inbox","key":"u1","value":{"category":"reminders","data":{"contact_name":"Ana","reminder_id":"r1"},"id":"rin.reminder.inbox:0:1:0","notification":"reminder.followup","source":{"offset":1,"partition":0,"topic":"rin.reminder.inbox"},"type":"intent","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.notify.deliveries","key":"u1","value":{"body":"","category":"premium","channel":"push","deep_link":"rin://home","id":"rin.reminder.inbox:0:1:0:0","merged_intents":["i1"],"notification":"premium.who_viewed","notification_id":"rin.reminder.inbox:0:1:0:0","title":"premium.who_viewed","type":"delivery","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.reminder.inbox:0:1:0:1","intent_id":"i1","notification_id":"rin.reminder.inbox:0:1:0:0","outcome":"delivered","rule":"P-TOY-1","type":"decision","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.reminder.inbox:0:1:0:2","intent_id":"rin.reminder.inbox:0:1:0","outcome":"suppressed","reason":"budget","rule":"P-TOY-1","type":"decision","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T09:30:00Z","topic":"rin.delivery.inbox","key":"u1","value":{"category":"score","data":{"new":80},"id":"rin.score.batches:0:1:0","notification":"score.updated","source":{"offset":1,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T09:30:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.score.batches:0:1:0:0","intent_id":"rin.score.batches:0:1:0","outcome":"suppressed","reason":"budget","rule":"P-TOY-1","type":"decision","user_id":"u1","v":1}}"#,
        ]
        #expect(output.split(separator: "\n").map(String.init) == expected)
    }

    /// The runtime's origin rule (`OutputIDs`): a forwarded or inter-stage record has the ids of
    /// where it was first written; timers take the next offset of the stage's log, and a record
    /// read where it was written continues the numbers timers took at its offset.
    @Test func idsDeriveFromWhereEachRecordWasFirstWritten() throws {
        let input = [
            Lines.signup("2026-03-02T08:00:00Z", "u1", zone: "Europe/Berlin", id: "a1"),  // inbox offset 0
            Lines.intent("2026-03-02T08:00:00Z", "u1", holdMinutes: 60, id: "i1"),  // inbox offset 1
            // 10:00 and 10:30 Berlin: both fire from the reminder inbox's next offset, 2.
            Lines.reminder("2026-03-02T08:00:00Z", "u1", reminder: "r0", local: "2026-03-02T10:00", zone: "Europe/Berlin", id: "m0"),
            Lines.reminder("2026-03-02T08:00:00Z", "u1", reminder: "r1", local: "2026-03-02T10:30", zone: "Europe/Berlin", id: "m1"),
            Lines.intent("2026-03-02T10:00:00Z", "u1", holdMinutes: 30, id: "i2"),  // inbox offset 4
            Lines.intent("2026-03-02T11:00:00Z", "u1", holdMinutes: nil, id: "i3"),  // inbox offset 5
        ].joined(separator: "\n")
        let output = try SimulationRun.run(input, simulator: toyFleet())
        let produced = output.split(separator: "\n").compactMap { line -> String? in
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))["value"],
                  let id = value["id"]?.stringValue, let type = value["type"]?.stringValue
            else { return nil }
            let subject = value["intent_id"]?.stringValue ?? value["merged_intents"]?.arrayValue?.first?.stringValue ?? value["notification"]?.stringValue ?? ""
            return "\(id) \(type) \(subject) \(value["outcome"]?.stringValue ?? "")"
        }
        #expect(produced == [
            "rin.delivery.inbox:0:1:0 decision i1 deferred",
            // 09:00: the reminder's timer step (reminder inbox offset 2) sends intent 0; the
            // delivery stage folds it, first firing i1's hold, with ids of that origin.
            "rin.reminder.inbox:0:2:0 intent reminder.followup ",
            "rin.reminder.inbox:0:2:0:0 delivery i1 ",
            "rin.reminder.inbox:0:2:0:1 decision i1 delivered",
            "rin.reminder.inbox:0:2:0:2 delivery rin.reminder.inbox:0:2:0 ",
            "rin.reminder.inbox:0:2:0:3 decision rin.reminder.inbox:0:2:0 delivered",
            // 09:30: a second timer step at the same offset continues its ids and its output
            // positions, so this intent's ids cannot collide with the first one's.
            "rin.reminder.inbox:0:2:1 intent reminder.followup ",
            "rin.reminder.inbox:0:2:1:0 decision rin.reminder.inbox:0:2:1 suppressed",
            "rin.delivery.inbox:0:4:0 decision i2 deferred",
            // 10:30: i2's hold fires from the inbox's next offset, 5; i3, read at offset 5 where
            // it was written, continues there.
            "rin.delivery.inbox:0:5:0 decision i2 suppressed",
            "rin.delivery.inbox:0:5:1 decision i3 suppressed",
        ])
    }

    // DESIGN principle 7: bad records go to `<topic>.dlq` with the error and the run goes on.
    @Test func badRecordsGoToTheirDeadLetterTopicAndTheRunGoesOn() throws {
        let input = [
            Lines.score("2026-03-02T07:00:00Z", "u1", 101, id: "s1"),  // fails validation
            Lines.score("2026-03-02T07:01:00Z", "u1", 13, id: "s2"),  // the score stage refuses it
            Lines.score("2026-03-02T07:02:00Z", "u1", 99, id: "s3"),  // the delivery stage refuses its intent
            Lines.signup("2026-03-02T07:03:00Z", "u1", zone: "Europe/Berlin", id: "a1")
                .replacingOccurrences(of: #""key":"u1""#, with: #""key":"u2""#),  // key ≠ user_id
            #"{"at":"2026-03-02T07:04:00Z","topic":"rin.app.activity","key":"u1","value":{"v":1,"type":"user.signed_up","id":"a2","user_id":"u1"}}"#,
            Lines.score("2026-03-02T07:05:00Z", "u1", 50, id: "s4"),
        ].joined(separator: "\n")
        let output = try SimulationRun.run(input, simulator: toyFleet()).split(separator: "\n").map(String.init)
        #expect(output == [
            #"{"at":"2026-03-02T07:00:00Z","topic":"rin.score.batches.dlq","key":"u1","value":{"error":"field 'score' is 101, outside 0–100","record":{"batch_id":"b-s1","components":{"position":50,"quality":50,"stability":50,"trust":50},"computed_at":"2026-03-02T07:00:00Z","id":"s1","score":101,"type":"score.computed","user_id":"u1","v":1},"source_line":1,"source_offset":0,"source_partition":0,"source_topic":"rin.score.batches"}}"#,
            #"{"at":"2026-03-02T07:01:00Z","topic":"rin.score.batches.dlq","key":"u1","value":{"error":"score 13 is unlucky","record":{"batch_id":"b-s2","components":{"position":50,"quality":50,"stability":50,"trust":50},"computed_at":"2026-03-02T07:01:00Z","id":"s2","score":13,"type":"score.computed","user_id":"u1","v":1},"source_line":2,"source_offset":1,"source_partition":0,"source_topic":"rin.score.batches"}}"#,
            #"{"at":"2026-03-02T07:02:00Z","topic":"rin.delivery.inbox","key":"u1","value":{"category":"score","data":{"new":99},"id":"rin.score.batches:0:2:0","notification":"bogus","source":{"offset":2,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T07:02:00Z","topic":"rin.delivery.inbox.dlq","key":"u1","value":{"error":"unknown notification 'bogus'","record":{"category":"score","data":{"new":99},"id":"rin.score.batches:0:2:0","notification":"bogus","source":{"offset":2,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"u1","v":1},"source_offset":0,"source_partition":0,"source_topic":"rin.delivery.inbox"}}"#,
            #"{"at":"2026-03-02T07:03:00Z","topic":"rin.app.activity.dlq","key":"u2","value":{"error":"key 'u2' differs from the record's user_id 'u1'","record":{"id":"a1","time_zone":"Europe/Berlin","type":"user.signed_up","user_id":"u1","v":1},"source_line":4,"source_offset":0,"source_partition":0,"source_topic":"rin.app.activity"}}"#,
            #"{"at":"2026-03-02T07:04:00Z","topic":"rin.app.activity.dlq","key":"u1","value":{"error":"missing required field 'time_zone'","record":{"id":"a2","type":"user.signed_up","user_id":"u1","v":1},"source_line":5,"source_offset":1,"source_partition":0,"source_topic":"rin.app.activity"}}"#,
            #"{"at":"2026-03-02T07:05:00Z","topic":"rin.delivery.inbox","key":"u1","value":{"category":"score","data":{"new":50},"id":"rin.score.batches:0:3:0","notification":"score.updated","source":{"offset":3,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T07:05:00Z","topic":"rin.notify.deliveries","key":"u1","value":{"body":"","category":"score","channel":"push","deep_link":"rin://home","id":"rin.score.batches:0:3:0:0","merged_intents":["rin.score.batches:0:3:0"],"notification":"score.updated","notification_id":"rin.score.batches:0:3:0:0","title":"score.updated","type":"delivery","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-02T07:05:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.score.batches:0:3:0:1","intent_id":"rin.score.batches:0:3:0","notification_id":"rin.score.batches:0:3:0:0","outcome":"delivered","rule":"P-TOY-1","type":"decision","user_id":"u1","v":1}}"#,
        ])
    }

    @Test func untilFiresTheTimersDueAfterTheLastLine() throws {
        let input = Lines.intent("2026-03-02T08:00:00Z", "u1", holdMinutes: 90, id: "i1")
        let short = try SimulationRun.run(input, simulator: toyFleet(), until: Timestamp(rfc3339: "2026-03-02T09:29:59Z"))
        #expect(short.split(separator: "\n").count == 1)  // only the deferral
        let long = try SimulationRun.run(input, simulator: toyFleet(), until: Timestamp(rfc3339: "2026-03-02T09:30:00Z"))
        let lines = long.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(#"{"at":"2026-03-02T09:30:00Z","#) })
    }

    @Test func untilBeforeTheLastLineIsRefused() throws {
        let input = Lines.tick("2026-03-02T08:00:00Z", id: "t1")
        #expect(throws: SimulationError.untilBeforeLastLine(
            until: Timestamp(rfc3339: "2026-03-02T07:00:00Z")!, lastLine: 1, lastAt: Timestamp(rfc3339: "2026-03-02T08:00:00Z")!)
        ) {
            try SimulationRun.run(input, simulator: toyFleet(), until: Timestamp(rfc3339: "2026-03-02T07:00:00Z"))
        }
    }

    @Test func linesOutOfOrderAreRefusedNamingBothLines() throws {
        let input = [
            Lines.tick("2026-03-02T08:00:00Z", id: "t1"),
            "",
            Lines.tick("2026-03-02T07:59:59Z", id: "t2"),
        ].joined(separator: "\n")
        do {
            _ = try SimulationRun.run(input, simulator: toyFleet())
            Issue.record("expected an error")
        } catch {
            #expect("\(error)"
                == "line 3: 'at' 2026-03-02T07:59:59Z is earlier than 2026-03-02T08:00:00Z on line 1; input lines must be in non-decreasing 'at' order")
        }
    }

    @Test(arguments: [
        (#"{"at":"2026-03-02T08:00:00Z","topic":"rin.score.batches""#, "line 2: not valid JSON: unexpected end of text at byte 57"),
        (#"[1,2]"#, "line 2: expected a JSON object with 'at', 'topic', 'key' and 'value'"),
        (#"{"topic":"rin.score.batches","value":{}}"#, "line 2: missing 'at'"),
        (#"{"at":"yesterday","topic":"rin.score.batches","value":{}}"#,
         "line 2: 'at' is 'yesterday', not an RFC 3339 time such as 2026-03-02T09:00:00Z"),
        (#"{"at":"2026-03-02T08:00:00Z","value":{}}"#, "line 2: missing 'topic'"),
        (#"{"at":"2026-03-02T08:00:00Z","topic":7,"value":{}}"#, "line 2: 'topic' must be a string"),
        (#"{"at":"2026-03-02T08:00:00Z","topic":"rin.score.batches","key":1,"value":{}}"#, "line 2: 'key' must be a string"),
        (#"{"at":"2026-03-02T08:00:00Z","topic":"rin.score.batches"}"#, "line 2: missing 'value'"),
        (#"{"at":"2026-03-02T08:00:00Z","topic":"rin.score.batches","value":"x"}"#,
         "line 2: 'value' must be a JSON object (the record)"),
        (#"{"at":"2026-03-02T08:00:00Z","topic":"rin.notify.decisions","value":{}}"#,
         "line 2: no worker of the simulated fleet consumes topic 'rin.notify.decisions'; it consumes rin.app.activity, rin.contacts.sync-results, rin.delivery.inbox, rin.reminder.inbox, rin.reminders, rin.score.batches, rin.security.access-requests"),
    ])
    func aMalformedLineStopsTheRunNamingTheLine(line: String, message: String) throws {
        let input = Lines.tick("2026-03-02T07:00:00Z", id: "t1") + "\n" + line
        do {
            _ = try SimulationRun.run(input, simulator: toyFleet())
            Issue.record("expected an error")
        } catch {
            #expect("\(error)" == message)
        }
    }

    @Test func theSummaryCountsDecisionsPerUserAndLocalDay() throws {
        let input = [
            Lines.signup("2026-03-02T07:00:00Z", "u1", zone: "Asia/Tokyo", id: "a1"),
            // 14:30Z is 23:30 in Tokyo: three intents on 2 March local, the third over budget.
            Lines.score("2026-03-02T14:30:00Z", "u1", 40, id: "s1"),
            Lines.score("2026-03-02T14:31:00Z", "u1", 41, id: "s2"),
            Lines.score("2026-03-02T14:32:00Z", "u1", 42, id: "s3"),
            // 15:00Z is already 3 March in Tokyo (same UTC day): a fresh budget.
            Lines.score("2026-03-02T15:00:00Z", "u1", 43, id: "s4"),
            // u2's zone is unknown: UTC days. The deferral itself is not counted.
            Lines.intent("2026-03-02T15:00:00Z", "u2", holdMinutes: 30, id: "i1"),
            Lines.intent("2026-03-02T15:00:00Z", "u2", holdMinutes: nil, id: "i2"),
        ].joined(separator: "\n")
        let table = try SimulationRun.run(
            input, simulator: toyFleet(), until: Timestamp(rfc3339: "2026-03-03T00:00:00Z"), format: .summary)
        #expect(table == """
            # decisions per user and day; a day is the user's local day in the zone shown (UTC where no worker knows the user's time zone)
            user  day         zone        delivered  suppressed: budget
            u1    2026-03-02  Asia/Tokyo  2          1
            u1    2026-03-03  Asia/Tokyo  1          0
            u2    2026-03-02  UTC         2          0

            """)
    }

    @Test func theFleetFoldsEveryExternalTopicAndBothInboxes() throws {
        let fleet = try Simulator.fleet(profile: .shipped("rin"))
        #expect(fleet.consumedTopics == [
            "rin.app.activity", "rin.contacts.sync-results", "rin.delivery.inbox", "rin.reminder.inbox",
            "rin.reminders", "rin.score.batches", "rin.security.access-requests",
        ])
        #expect(throws: SimulationError.unknownTopic(line: 1, topic: "rin.notify.deliveries", consumed: fleet.consumedTopics)) {
            try SimulationRun.run(
                #"{"at":"2026-03-02T07:00:00Z","topic":"rin.notify.deliveries","key":"u1","value":{}}"#, simulator: fleet)
        }
        // An empty input is a valid run.
        #expect(try SimulationRun.run("", simulator: fleet) == "")
        #expect(throws: SimulationError.self) { try Simulator.fleet(profile: .shipped("nope")) }
    }

    @Test func aFleetWithoutStagesSaysSo() throws {
        let fleet = try Simulator(stages: [])
        #expect(fleet.consumedTopics.isEmpty)
        #expect(throws: SimulationError.unknownTopic(line: 1, topic: "rin.app.activity", consumed: [])) {
            try SimulationRun.run(Lines.signup("2026-03-02T07:00:00Z", "u1", zone: "UTC", id: "a1"), simulator: fleet)
        }
        #expect(SimulationError.unknownTopic(line: 1, topic: "t", consumed: []).description
            == "line 1: no worker of the simulated fleet consumes topic 't'; this fleet has no worker stages")
        #expect(try SimulationRun.run("", simulator: fleet) == "")
    }

    @Test func stagesMustNotShareATopicOrAName() {
        #expect(throws: SimulationError.configuration("two stages are named 'x'")) {
            try Simulator(stages: [
                FoldStage(name: "x", processor: CounterProcessor(), folding: "a"),
                FoldStage(name: "x", processor: CounterProcessor(), folding: "b"),
            ])
        }
        #expect(throws: SimulationError.configuration("topic 'a' is consumed by both 'x' and 'y'")) {
            try Simulator(stages: [
                FoldStage(name: "x", processor: CounterProcessor(), folding: "a"),
                FoldStage(name: "y", processor: CounterProcessor(), folding: "b", ingesting: ["a"]),
            ])
        }
    }

    @Test func profileArgumentsResolveToAShippedNameOrAReadableFile() throws {
        #expect(try ProfileChoice.resolve("rin") == .shipped("rin"))
        #expect(try ProfileChoice.resolve("fitcircle") == .shipped("fitcircle"))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sim-profile-\(getpid()).yaml").path
        try "name: test\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try ProfileChoice.resolve(path) == .file(path))
        #expect(throws: SimulationError.profile(
            "profile 'nowhere.yaml' is neither a shipped profile (fitcircle, rin) nor a readable file")
        ) {
            try ProfileChoice.resolve("nowhere.yaml")
        }
    }

    @Test func outputLinesEscapeStringsAsJSONEncoderDoes() throws {
        let tricky = "a\"b\\c/d\n\t\u{01}\u{1F}é😀\u{08}\u{0C}\r"
        let output = SimulationOutput(
            at: Timestamp(rfc3339: "2026-03-02T07:00:00.250Z")!, topic: "t", key: tricky,
            value: .record(.tick(Tick(id: "x"))))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let quoted = String(decoding: try encoder.encode(tricky), as: UTF8.self)
        #expect(output.jsonLine == #"{"at":"2026-03-02T07:00:00.250Z","topic":"t","key":"# + quoted + #","value":{"id":"x","type":"tick","user_id":"","v":1}}"#)
        // And it parses back.
        let parsed = try JSONDecoder().decode(JSONValue.self, from: Data(output.jsonLine.utf8))
        #expect(parsed["key"] == .string(tricky))
    }

    /// A processor whose wake-up stays in the past must not hang the simulation: it fires a
    /// bounded number of times (at most once per stage advance or record), and time still passes.
    @Test func aStageWhoseTimerStaysDueDoesNotHangTheSimulation() throws {
        var simulator = try Simulator(stages: [
            FoldStage(name: "stuck", processor: StuckAlarmProcessor(stuckAt: at(0)), folding: Topics.deliveryInbox,
                      ingesting: [Topics.appActivity]),
        ])
        let lines = (0..<5).map { Lines.tick(at(Int64($0) * 60).rfc3339, id: "t\($0)") }
        _ = try simulator.feed(line: Lines.signup(at(0).rfc3339, "u1", zone: "UTC", id: "a1"))
        for line in lines { _ = try simulator.feed(line: line) }
        _ = simulator.advance(to: at(3600))
        let stored = try #require(simulator.snapshot().stages.first?.users.first?.state)
        let fired = try JSONDecoder().decode(StuckAlarmProcessor.State.self, from: Data(stored.utf8)).fired
        #expect((1...20).contains(fired))
        #expect(simulator.time == at(3600))
    }

    @Test func aSnapshotOnlyRestoresTheSameStages() throws {
        var other = try Simulator(stages: [FoldStage(name: "counter", processor: CounterProcessor(), folding: "x")])
        let snapshot = try toyFleet().snapshot()
        #expect(throws: SimulationError.snapshot(
            "the snapshot's stages (score-worker, sync-worker, reminder-worker, access-worker, delivery-worker) differ from this simulator's (counter)")
        ) {
            try other.restore(snapshot)
        }
    }
}

/// Snapshots keep a state's own encoding verbatim, whatever numbers it holds.
@Suite struct SnapshotFidelityTests {
    struct WideState: Codable, Hashable, Sendable { var hash: UInt64 = 0 }
    struct HashingProcessor: UserProcessor {
        func initialState(userId: String) -> WideState { WideState() }
        func process(_ record: FleetRecord, state: inout WideState, context: inout ProcessingContext) throws(RecordError) {
            state.hash = UInt64.max - 1  // above Int64.max: lost if routed through Int64 or Double
        }
        func fireTimers(state: inout WideState, context: inout ProcessingContext) {}
        func nextWakeUp(_ state: WideState) -> Timestamp? { nil }
    }

    @Test func aSnapshotRestoresUInt64ValuesExactly() throws {
        var simulator = try Simulator(stages: [
            FoldStage(name: "hashing", processor: HashingProcessor(), folding: Topics.deliveryInbox, ingesting: [Topics.appActivity]),
        ])
        _ = try simulator.feed(line: Lines.signup("2026-03-02T07:00:00Z", "u1", zone: "UTC", id: "a1"))
        let snapshot = simulator.snapshot()
        var restored = try Simulator(stages: [
            FoldStage(name: "hashing", processor: HashingProcessor(), folding: Topics.deliveryInbox, ingesting: [Topics.appActivity]),
        ])
        try restored.restore(snapshot)
        #expect(restored.snapshot() == snapshot)
        let stage = try #require(restored.stages.first as? FoldStage<HashingProcessor>)
        #expect(stage.fold.states["u1"]?.hash == UInt64.max - 1)
    }
}
