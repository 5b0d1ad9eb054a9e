import FleetModel
import Testing
import UpstreamProcessors

private let topic = Topics.scoreBatches

private func score(
    _ value: Int, batch: String, at time: String, quality: Int = 70, position: Int = 50, stability: Int = 40, trust: Int = 90
) -> FleetRecord {
    .scoreComputed(ScoreComputed(
        id: "rec-\(batch)", userId: "u1", batchId: batch, computedAt: at(time), score: value,
        components: .init(quality: quality, position: position, stability: stability, trust: trust)))
}

private func scoreHarness(_ settings: ScoreSettings = .rin) -> Harness<ScoreProcessor> {
    Harness(ScoreProcessor(settings: settings), topic: topic)
}

/// Runs scores on consecutive days at 02:00Z and returns the notifications raised, as
/// `notification new/old`.
private func notifications(for scores: [Int]) throws -> [String] {
    var h = scoreHarness()
    var seen: [String] = []
    for (day, value) in scores.enumerated() {
        let time = Timestamp(rfc3339: "2026-03-01T02:00:00Z")! + .days(Int64(day))
        for output in try h.process(score(value, batch: "b\(day)", at: time.rfc3339), at: time) {
            guard let intent = output.intent else { continue }
            seen.append(describe(intent))
        }
    }
    return seen
}

@Suite("Score worker")
struct ScoreProcessorTests {
    @Test("P-SCO-1 the first score raises score.updated without old, and a value event")
    func firstScore() throws {
        var h = scoreHarness()
        let out = try h.process(score(55, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:05Z"))
        let now = at("2026-03-01T02:00:05Z")
        #expect(out == [
            Expect.intent(
                "rin.score.batches:0:0:0", "score.updated", "SCORE", ["new": 55, "label": "Building"],
                source: source(topic, 0), at: now),
            Expect.valueEvent("rin.score.batches:0:0:1", "score_updated", at: now),
        ])
        #expect(h.state.lastNotifiedScore == 55)
        #expect(h.state.highestLabelFrom == 30)
    }

    @Test("P-SCO-2 later scores notify only when 2 or more points from the last notified score")
    func changeThreshold() throws {
        var h = scoreHarness()
        try h.process(score(55, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:00Z"))
        // +1 from 55: value event only.
        let small = try h.process(score(56, batch: "b2", at: "2026-03-02T02:00:00Z"), at: at("2026-03-02T02:00:00Z"))
        #expect(small == [Expect.valueEvent("rin.score.batches:0:1:0", "score_updated", at: at("2026-03-02T02:00:00Z"))])
        // 57 is +2 from the last *notified* score (55), although only +1 from the last score.
        let now = at("2026-03-03T02:00:00Z")
        let up = try h.process(score(57, batch: "b3", at: "2026-03-03T02:00:00Z"), at: now)
        #expect(up.first == Expect.intent(
            "rin.score.batches:0:2:0", "score.updated", "SCORE", ["new": 57, "old": 55, "label": "Building"],
            source: source(topic, 2), at: now))
        // Down: 57 → 56 nothing, → 55 is -2 from 57.
        try h.process(score(56, batch: "b4", at: "2026-03-04T02:00:00Z"), at: at("2026-03-04T02:00:00Z"))
        let down = try h.process(score(55, batch: "b5", at: "2026-03-05T02:00:00Z"), at: at("2026-03-05T02:00:00Z"))
        #expect(down.compactMap(\.intent).map(\.data) == [["new": 55, "old": 57, "label": "Building"]])
    }

    @Test("P-SCO-3 an upward label milestone names the label and its lower bound, once")
    func milestones() throws {
        let seen = try notifications(for: [25, 35, 62, 58, 61, 85, 79, 81])
        #expect(seen == [
            "score.updated label=New new=25",
            "score.updated label=Building new=35 old=25",
            "score.milestone label=Building score=35 threshold=30",
            "score.updated label=Good new=62 old=35",
            "score.milestone label=Good score=62 threshold=60",
            "score.updated label=Building new=58 old=62",
            "score.updated label=Good new=61 old=58",
            "score.updated label=Strong new=85 old=61",
            "score.milestone label=Strong score=85 threshold=80",
            "score.updated label=Good new=79 old=85",
            "score.updated label=Strong new=81 old=79",
        ])
    }

    @Test("P-SCO-3 a jump over a label reaches only the label it lands in; the first score sets no milestone")
    func milestoneJump() throws {
        var h = scoreHarness()
        try h.process(score(85, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:00Z"))
        #expect(h.outputs.compactMap(\.intent).map(\.notification) == ["score.updated"])
        var h2 = scoreHarness()
        try h2.process(score(10, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:00Z"))
        let now = at("2026-03-02T02:00:00Z")
        let out = try h2.process(score(64, batch: "b2", at: "2026-03-02T02:00:00Z"), at: now)
        #expect(out[1] == Expect.intent(
            "rin.score.batches:0:1:1", "score.milestone", "SCORE", ["label": "Good", "threshold": 60, "score": 64],
            source: source(topic, 1), at: now))
        #expect(out.compactMap(\.intent).count == 2)
    }

    @Test("P-SCO-4 P-SCO-6 a change of 2 or more refreshes the Score Changed item (48 h, label, sentence); every score is a value event")
    func scoreChangedItem() throws {
        var h = scoreHarness()
        try h.process(score(72, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:00Z"))
        let now = at("2026-03-02T02:00:03Z")
        let out = try h.process(
            score(75, batch: "b2", at: "2026-03-02T02:00:00Z", quality: 80, position: 60, stability: 55, trust: 90), at: now)
        #expect(out == [
            Expect.intent(
                "rin.score.batches:0:1:0", "score.updated", "SCORE", ["new": 75, "old": 72, "label": "Good"],
                source: source(topic, 1), at: now),
            Expect.item(
                "rin.score.batches:0:1:1", section: "score_changed", itemId: "score_changed",
                [
                    "score": 75, "old": 72, "delta": 3, "label": "Good",
                    "explanation": "Your score is strong because many of your connections are mutual and verified.",
                    "explanation_key": "quality_highest",
                    "components": ["quality": 80, "position": 60, "stability": 55, "trust": 90],
                    "computed_at": "2026-03-02T02:00:00Z",
                ],
                expiresAt: at("2026-03-04T02:00:03Z"), at: now),
            Expect.valueEvent("rin.score.batches:0:1:2", "score_updated", at: now),
        ])
        // +1: no item, but still a value event.
        let quiet = try h.process(score(76, batch: "b3", at: "2026-03-03T02:00:00Z"), at: at("2026-03-03T02:00:00Z"))
        #expect(quiet.map(\.record.type) == ["retention.event"])
    }

    @Test("P-SCO-6 the explainability sentence follows the score spec §5 table")
    func explainability() {
        let s = ExplainabilitySettings.rin
        func pick(_ score: Int, _ q: Int, _ p: Int, _ st: Int, _ t: Int) -> Explainability {
            Explainability.choose(score: score, components: .init(quality: q, position: p, stability: st, trust: t), settings: s)
        }
        #expect(pick(29, 90, 90, 90, 90) == .newUserBuilding)
        #expect(pick(30, 90, 90, 90, 39) == .trustPenalty)
        #expect(pick(50, 39, 90, 90, 60) == .qualityLow)
        #expect(pick(70, 80, 60, 50, 100) == .qualityHighest)
        #expect(pick(70, 60, 80, 50, 100) == .positionHighest)
        #expect(pick(70, 60, 60, 75, 100) == .stabilityHighest)
        #expect(pick(70, 70, 70, 70, 70) == .qualityHighest)  // ties go to the heavier component
        #expect(Explainability.positionHighest.sentence == "You're well-connected across different groups in your network.")
        #expect(Explainability.newUserBuilding.sentence
            == "Your score is building as we learn about your network. Keep adding and verifying contacts.")
    }

    @Test("P-SCO-5 three consecutive falling calculations signal score_declining once per run")
    func decliningRun() throws {
        var h = scoreHarness()
        let scores = [70, 69, 68, 67, 66, 66, 65, 64, 63]
        var signalDays: [Int] = []
        for (day, value) in scores.enumerated() {
            let time = at("2026-03-01T02:00:00Z") + .days(Int64(day))
            let out = try h.process(score(value, batch: "b\(day)", at: time.rfc3339), at: time)
            if out.contains(where: { $0.retentionEvent?.event == "retention.churn_signal_detected" }) { signalDays.append(day) }
        }
        // Day 3 is the third fall (69, 68, 67); day 4 continues the run; day 5 (equal) ends it;
        // days 6–8 are a new run.
        #expect(signalDays == [3, 8])
        let last = h.outputs.last
        #expect(last == Expect.churnSignal("rin.score.batches:0:8:1", "score_declining", at: at("2026-03-09T02:00:00Z")))
    }

    @Test("P-SCO-7 invalid scores are rejected (dead-lettered) and leave the state untouched")
    func invalidScores() throws {
        var h = scoreHarness()
        try h.process(score(50, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:00Z"))
        let before = h.state
        #expect(throws: RecordError("field 'score' is 101, outside 0–100")) {
            try h.process(score(101, batch: "b2", at: "2026-03-02T02:00:00Z"), at: at("2026-03-02T02:00:00Z"))
        }
        #expect(throws: RecordError("field 'components.trust' is -1, outside 0–100")) {
            try h.process(score(60, batch: "b3", at: "2026-03-03T02:00:00Z", trust: -1), at: at("2026-03-03T02:00:00Z"))
        }
        #expect(h.state == before)
        // A missing component is a decoding error at the edge.
        let json = #"{"v":1,"type":"score.computed","id":"r","user_id":"u1","batch_id":"b","computed_at":"2026-03-01T02:00:00Z","score":50,"components":{"quality":1,"position":2,"stability":3}}"#
        #expect(throws: RecordError("missing required field 'components.trust'")) {
            try RecordCodec.decode(Array(json.utf8), topic: topic)
        }
    }

    @Test("Batches are idempotent: a re-delivered or older batch is ignored")
    func idempotentBatches() throws {
        var h = scoreHarness()
        try h.process(score(50, batch: "b1", at: "2026-03-02T02:00:00Z"), at: at("2026-03-02T02:00:00Z"))
        let again = try h.process(score(50, batch: "b1", at: "2026-03-02T02:00:00Z"), at: at("2026-03-02T02:05:00Z"))
        let older = try h.process(score(80, batch: "b0", at: "2026-03-01T02:00:00Z"), at: at("2026-03-02T02:06:00Z"))
        #expect(again.isEmpty)
        #expect(older.isEmpty)
        #expect(h.state.lastScore == 50)
    }

    @Test("The change threshold and labels come from settings")
    func settingsDriven() throws {
        var settings = ScoreSettings.rin
        settings.changeThreshold = 5
        settings.labels = [ScoreLabelBand(name: "Low", from: 0), ScoreLabelBand(name: "High", from: 50)]
        var h = scoreHarness(settings)
        try h.process(score(40, batch: "b1", at: "2026-03-01T02:00:00Z"), at: at("2026-03-01T02:00:00Z"))
        let four = try h.process(score(44, batch: "b2", at: "2026-03-02T02:00:00Z"), at: at("2026-03-02T02:00:00Z"))
        #expect(four.compactMap(\.intent).isEmpty)
        let out = try h.process(score(51, batch: "b3", at: "2026-03-03T02:00:00Z"), at: at("2026-03-03T02:00:00Z"))
        #expect(out.compactMap(\.intent).map(\.data) == [
            ["new": 51, "old": 40, "label": "High"], ["label": "High", "threshold": 50, "score": 51],
        ])
    }

    @Test("Records of other types are rejected; ticks are ignored")
    func otherRecords() throws {
        var h = scoreHarness()
        #expect(try h.process(.tick(Tick(id: "t")), at: at("2026-03-01T00:00:00Z")).isEmpty)
        #expect(throws: RecordError("score-worker does not process records of type 'access.requested'")) {
            try h.process(
                .accessRequested(AccessRequested(id: "a", userId: "u1", requestId: "r", requesterName: "A", field: "f")),
                at: at("2026-03-01T00:00:00Z"))
        }
    }
}

/// `notification key=value …` with sorted keys, for compact literal expectations.
func describe(_ intent: Intent) -> String {
    let fields = intent.data.keys.sorted().map { key -> String in
        switch intent.data[key] {
        case .int(let i): "\(key)=\(i)"
        case .string(let s): "\(key)=\(s)"
        case let other: "\(key)=\(String(describing: other))"
        }
    }
    return ([intent.notification] + fields).joined(separator: " ")
}
