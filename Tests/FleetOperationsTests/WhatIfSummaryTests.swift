import FleetModel
import FleetOperations
import Testing

@Suite struct WhatIfSummaryTests {
    func decision(_ intent: String, _ outcome: DecisionOutcome, _ reason: String?, _ rule: String, user: String = "maya") -> FleetRecord {
        .decision(Decision(id: "d-\(intent)-\(outcome)", userId: user, intentId: intent, outcome: outcome, reason: reason, rule: rule))
    }

    func delivery(_ intents: [String], notification: String = "score.updated", id: String = "n1", user: String = "maya") -> FleetRecord {
        .delivery(Delivery(
            id: "del-\(id)", userId: user, notificationId: id, channel: .push, notification: notification, category: "SCORE",
            title: "t", body: "b", deepLink: "rin://x", mergedIntents: intents))
    }

    @Test("a delivery the candidate budget holds back is lost, filed under the rule and reason now deciding it (P-BUD-1)")
    func lostDelivery() {
        let summary = WhatIfSummary(
            recorded: [decision("i1", .delivered, "within_daily_budget", "P-BUD-1"), delivery(["i1"]),
                       decision("i2", .delivered, "within_daily_budget", "P-BUD-1"), delivery(["i2"], id: "n2")],
            replayed: [decision("i1", .delivered, "within_daily_budget", "P-BUD-1"), delivery(["i1"]),
                       decision("i2", .suppressed, "daily_budget", "P-BUD-1")],
            intentTypes: ["i2": "contacts.dedup_ready"])
        #expect(summary.lost.map(\.key) == ["i2"])
        #expect(summary.gained.isEmpty)
        #expect(summary.rows == [WhatIfSummary.Row(rule: "P-BUD-1", notification: "contacts.dedup_ready", reason: "daily_budget", lost: 1)])
        let text = summary.render(details: true)
        #expect(text.hasPrefix("deliveries lost: 1, gained: 0, outcome changes: 0"))
        #expect(text.contains("delivered (within_daily_budget, P-BUD-1)") && text.contains("suppressed (daily_budget, P-BUD-1)"))
    }

    @Test("a gained delivery is filed under the recorded decision; a deferral is replaced by the later final decision")
    func gainedDelivery() {
        let summary = WhatIfSummary(
            recorded: [decision("i3", .deferred, "quiet_hours", "P-DND-1"), decision("i3", .suppressed, "type_cap", "P-CAP-1")],
            replayed: [decision("i3", .delivered, "within_daily_budget", "P-BUD-1"), delivery(["i3"], notification: "contacts.enrichment")])
        #expect(summary.gained.map(\.key) == ["i3"])
        #expect(summary.gained.first?.recorded?.rule == "P-CAP-1")
        #expect(summary.rows.map(\.rule) == ["P-CAP-1"])
        #expect(summary.rows.first?.notification == "contacts.enrichment")
    }

    @Test("an outcome change without a change in delivery is counted apart; identical sides say so")
    func outcomeChanges() {
        let summary = WhatIfSummary(
            recorded: [decision("i4", .suppressed, "daily_budget", "P-BUD-1")],
            replayed: [decision("i4", .digested, "daily_budget", "P-BUD-5"), delivery(["i9"], id: "n9")])
        #expect(summary.changes.map(\.kind) == [.changed, .gained])
        #expect(summary.rows.first { $0.rule == "P-BUD-5" }?.changed == 1)
        let same = WhatIfSummary(recorded: [delivery(["i1"])], replayed: [delivery(["i1"])])
        #expect(same.changes.isEmpty)
        #expect(same.render(details: false).hasSuffix("no difference"))
        #expect(same.json() == #"{"changes":[],"rows":[]}"#)
    }

    @Test("a merged intent that becomes suppressed while its notification still goes out is an outcome change, not a lost delivery (P-COAL-1)")
    func mergedBecomesSuppressed() {
        let summary = WhatIfSummary(
            recorded: [decision("i1", .delivered, "within_budget", "P-BUD-1"), decision("i2", .merged, "coalesced", "P-COAL-1"),
                       delivery(["i1", "i2"])],
            replayed: [decision("i1", .delivered, "within_budget", "P-BUD-1"), decision("i2", .suppressed, "day_one_limit", "P-BUD-6"),
                       delivery(["i1"])])
        #expect(summary.lost.isEmpty)
        #expect(summary.changes.map(\.kind) == [.changed])
        #expect(summary.changes.first?.key == "i2")
        // The whole notification held back is still a delivery lost, once per intent it carried.
        let gone = WhatIfSummary(
            recorded: [decision("i1", .delivered, "within_budget", "P-BUD-1"), decision("i2", .merged, "coalesced", "P-COAL-1"),
                       delivery(["i1", "i2"])],
            replayed: [decision("i1", .suppressed, "daily_budget", "P-BUD-1"), decision("i2", .suppressed, "daily_budget", "P-BUD-1")])
        #expect(gone.lost.map(\.key) == ["i1", "i2"])
    }

    @Test("a generated delivery (no intent) is keyed by its notification id")
    func generatedDelivery() {
        let summary = WhatIfSummary(recorded: [delivery([], notification: "retention.digest", id: "g1")], replayed: [])
        #expect(summary.lost.map(\.key) == ["notification:g1"])
        #expect(summary.lost.first?.notification == "retention.digest")
    }
}
