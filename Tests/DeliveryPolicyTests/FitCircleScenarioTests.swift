import DeliveryPolicy
import Testing

/// P-PROF-1: the fitcircle profile on the same engine: leaderboard throttled to 1/hour and
/// 3/day, held-back notifications summarised in the Sunday 20:00 weekly digest.
@Suite struct FitCircleScenarioTests {
    @Test("P-PROF-1 fitcircle: leaderboard at most once an hour, held back into the Sunday 20:00 weekly digest")
    func leaderboardThrottleAndWeeklyDigest() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"Europe/Berlin"}}
            {"at":"2026-03-03T09:00:00Z","value":{"type":"intent","id":"l1","notification":"fitcircle.leaderboard_change","category":"LEADERBOARD","data":{"position":5,"circle":"Work Warriors"}}}
            {"at":"2026-03-03T09:30:00Z","value":{"type":"intent","id":"l2","notification":"fitcircle.leaderboard_change","category":"LEADERBOARD","data":{"position":4,"circle":"Work Warriors"}}}
            {"at":"2026-03-03T10:05:00Z","value":{"type":"intent","id":"l3","notification":"fitcircle.leaderboard_change","category":"LEADERBOARD","data":{"position":3,"circle":"Work Warriors"}}}
            {"at":"2026-03-03T11:00:00Z","value":{"type":"intent","id":"s1","notification":"fitcircle.social","category":"SOCIAL","data":{"names":["Alex"]}}}
            {"at":"2026-03-03T11:00:10Z","value":{"type":"intent","id":"s2","notification":"fitcircle.social","category":"SOCIAL","data":{"names":["Sam"]}}}
            {"at":"2026-03-03T12:00:00Z","value":{"type":"intent","id":"c1","notification":"fitcircle.challenge_milestone","category":"CHALLENGE","data":{"challenge_id":"ch1","percent":50,"goal":"weight loss"}}}
            """, until: "2026-03-09T00:00:00Z", profile: try PolicyProfile.shipped("fitcircle"))
        #expect(d.summary == [
            "2026-03-03T09:00:30Z push fitcircle.leaderboard_change \"You moved to #5 in Work Warriors.\" fitcircle://leaderboard [l1]",
            "2026-03-03T09:00:30Z l1 delivered within_budget P-BUD-1",
            "2026-03-03T09:30:30Z l2 digested type_cap P-BUD-5",
            "2026-03-03T10:05:30Z push fitcircle.leaderboard_change \"You moved to #3 in Work Warriors.\" fitcircle://leaderboard [l3]",
            "2026-03-03T10:05:30Z l3 delivered within_budget P-BUD-1",
            "2026-03-03T11:00:30Z push fitcircle.social \"Alex and 1 other sent you encouragement.\" fitcircle://activity [s1,s2]",
            "2026-03-03T11:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-03T11:00:30Z s2 merged coalesced P-COAL-1",
            "2026-03-03T12:00:30Z c1 digested daily_budget P-BUD-5",
            "2026-03-08T19:00:00Z push digest.weekly \"You have 2 updates from this week. Tap to review.\" fitcircle://home [l2,c1]",
            "2026-03-08T19:00:00Z digest rin.delivery.inbox:0:3:0 delivered within_budget P-BUD-1",
        ])
    }
}
