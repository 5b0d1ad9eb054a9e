import DeliveryPolicy
import Testing

/// A simulation snapshotted to JSON and resumed (`Simulator.snapshot()` / `restore(_:)`), as a
/// restarted worker resumes from its changelog, must go on exactly as if it had never stopped.
@Suite struct RestartScenarioTests {
    // `DeliveryState` keeps 64-bit content and cap hashes; snapshots once routed states through
    // `JSONValue` and rounded hashes ≥ 2^63 through `Double`. These tests guard that.

    @Test("P-BUD-1 P-TIME-2 score.milestone stays once per label across a restart from a simulator snapshot")
    func milestoneCapSurvivesRestart() throws {
        var d = try Scenario.run(BudgetScenarioTests.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"m1","notification":"score.milestone","category":"SCORE","data":{"label":"Strong","threshold":80,"score":81}}}
            """, until: "2026-03-10T11:00:00Z")
        let survived = try d.restart()
        try d.feed("""
            {"at":"2026-03-11T10:00:00Z","value":{"type":"intent","id":"m2","notification":"score.milestone","category":"SCORE","data":{"label":"Strong","threshold":80,"score":82}}}
            """)
        try d.run(until: "2026-03-11T11:00:00Z")
        #expect(survived, "the restored delivery state differs from the one written")
        #expect(d.decisions == [
            "2026-03-10T10:00:30Z push score.milestone \"Your Rin Score reached Strong (80). Your network is growing stronger.\" rin://score [m1]",
            "2026-03-10T10:00:30Z m1 delivered within_budget P-BUD-1",
            "2026-03-11T10:00:30Z m2 suppressed type_cap P-BUD-1",
        ])
    }
}
