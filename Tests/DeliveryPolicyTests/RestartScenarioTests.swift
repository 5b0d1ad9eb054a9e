import DeliveryPolicy
import Testing

/// A simulation snapshotted to JSON and resumed (`Simulator.snapshot()` / `restore(_:)`), as a
/// restarted worker resumes from its changelog, must go on exactly as if it had never stopped.
@Suite struct RestartScenarioTests {
    /// Known issue: `DeliveryState` encodes its content and cap hashes (`RecentDelivery.bodyHash`,
    /// `KeyedCap.keyHash`) as unsigned 64-bit JSON numbers; the simulator's `StageSnapshot`
    /// carries states as `JSONValue`, which holds integers as `Int64`, so a hash ≥ 2^63 is
    /// rounded through `Double` and no longer matches after `restore(_:)`.
    static let uint64HashesLost: Comment =
        "FleetSimulation snapshot rounds DeliveryState's UInt64 hashes ≥ 2^63 through Double (JSONValue has no UInt64)"

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
        withKnownIssue(Self.uint64HashesLost) {
            #expect(survived, "the restored delivery state differs from the one written")
            #expect(d.decisions == [
                "2026-03-10T10:00:30Z push score.milestone \"Your Rin Score reached Strong (80). Your network is growing stronger.\" rin://score [m1]",
                "2026-03-10T10:00:30Z m1 delivered within_budget P-BUD-1",
                "2026-03-11T10:00:30Z m2 suppressed type_cap P-BUD-1",
            ])
        }
    }
}
