import FleetModel
import FleetWorkers
import Testing

/// The first-cut delivery policy the foundation's delivery worker runs (P-BUD-1 as a plain cap,
/// SECURITY immediate, P-IDEM-1 within the day).
@Suite("First-cut delivery policy")
struct DailyCapPolicyTests {
    let source = SourceCoordinates(topic: "rin.score.batches", partition: 0, offset: 0)

    func intent(_ id: String, _ notification: String, _ category: String, _ data: JSONObject = [:]) -> FleetRecord {
        .intent(Intent(id: id, userId: "u1", notification: notification, category: category, data: data, source: source))
    }

    func run(_ records: [(FleetRecord, String)], cap: Int = 3) throws -> [FleetRecord] {
        var fold = PartitionFold(processor: DailyCapPolicy(dailyCap: cap))
        var outputs: [FleetRecord] = []
        for (offset, (record, time)) in records.enumerated() {
            let step = fold.apply(record, timestamp: try #require(Timestamp(rfc3339: time)),
                                  coordinates: SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: Int64(offset)))
            if let error = step.deadLetter { throw error }
            outputs += step.outputs.map(\.record)
        }
        return outputs
    }

    func decisions(_ outputs: [FleetRecord]) -> [Decision] {
        outputs.compactMap { if case .decision(let d) = $0 { d } else { nil } }
    }

    @Test("P-BUD-1 the fourth ordinary intent of a UTC day is suppressed; security never counts")
    func cap() throws {
        let outputs = try run([
            (intent("a", "contacts.dedup_ready", "CONTACTS", ["count": 2]), "2026-11-21T08:00:00Z"),
            (intent("b", "security.new_signin", "SECURITY", ["detail": "New sign-in."]), "2026-11-21T08:01:00Z"),
            (intent("c", "score.updated", "SCORE", ["new": 40, "label": "Building"]), "2026-11-21T08:02:00Z"),
            (intent("d", "contacts.sync_conflict", "CONTACTS", ["count": 1]), "2026-11-21T08:03:00Z"),
            (intent("e", "contacts.dedup_ready", "CONTACTS", ["count": 5]), "2026-11-21T23:59:59Z"),
            (intent("f", "contacts.dedup_ready", "CONTACTS", ["count": 6]), "2026-11-22T00:00:00Z"),
        ])
        let byIntent = Dictionary(uniqueKeysWithValues: decisions(outputs).map { ($0.intentId, $0) })
        #expect(byIntent.mapValues(\.outcome) == [
            "a": .delivered, "b": .delivered, "c": .delivered, "d": .delivered, "e": .suppressed, "f": .delivered,
        ])
        #expect(byIntent["e"]?.reason == "daily_budget_exhausted")
        #expect(byIntent["e"]?.rule == "P-BUD-1")
        let bodies = outputs.compactMap { if case .delivery(let d) = $0 { d.body } else { nil } }
        #expect(bodies == [
            "2 possible duplicates found. Review and clean your contacts.",
            "New sign-in.",
            "Your Rin Score is ready: 40.",
            "1 contact changed on your phone and in Rin. Review the differences.",
            "6 possible duplicates found. Review and clean your contacts.",
        ])
    }

    @Test("P-IDEM-1 a redelivered intent gets no second decision")
    func idempotent() throws {
        let record = intent("a", "security.access_request", "SECURITY", ["requester_name": "Dana", "field": "email"])
        let outputs = try run([(record, "2026-11-21T08:00:00Z"), (record, "2026-11-21T08:00:05Z")])
        #expect(decisions(outputs).count == 1)
    }

    @Test("P-CAT-1 an unknown notification type is rejected for the dead-letter topic")
    func unknownType() {
        #expect(throws: RecordError("unknown notification type 'teleport.ready'")) {
            try run([(intent("x", "teleport.ready", "SCORE"), "2026-11-21T08:00:00Z")])
        }
    }

    @Test("ids derive from the inbox coordinates, so a re-run writes the same records")
    func ids() throws {
        let outputs = try run([(intent("a", "score.milestone", "SCORE", ["label": "Good", "threshold": 60, "score": 61]), "2026-11-21T08:00:00Z")])
        #expect(outputs.map(\.id) == ["rin.delivery.inbox:0:0:0", "rin.delivery.inbox:0:0:1"])
        #expect(try run([(intent("a", "score.milestone", "SCORE", ["label": "Good", "threshold": 60, "score": 61]), "2026-11-21T08:00:00Z")]) == outputs)
    }
}
