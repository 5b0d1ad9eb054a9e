import Testing

/// Daily budget, competition, reservation, digest and day one (POLICY.md §2). Users sign up in
/// UTC on 2026-03-01 (a Sunday) unless a test says otherwise; default quiet hours 22:00–07:00.
@Suite struct BudgetScenarioTests {
    static let signup = #"{"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}"#

    @Test("P-BUD-1 at most 3 non-security deliveries per local day; security never counts; P-BUD-4 the rest goes to sections")
    func dailyBudget() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-10T13:00:00Z","value":{"type":"intent","id":"c1","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":2,"contact_ids":["c4","c5"]}}}
            {"at":"2026-03-10T14:00:00Z","value":{"type":"intent","id":"a1","notification":"security.access_request","category":"SECURITY","data":{"request_id":"q1","requester_name":"Carol","field":"phone number"}}}
            {"at":"2026-03-11T10:00:00Z","value":{"type":"intent","id":"c2","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":1,"contact_ids":["c4"]}}}
            """, until: "2026-03-11T11:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:00:30Z push score.updated \"Your Rin Score changed: 72 to 75 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-10T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-10T11:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-10T11:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-10T12:00:30Z push contacts.dedup_ready \"1 possible duplicate found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-10T12:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-10T13:00:30Z c1 suppressed daily_budget P-BUD-1",
            "2026-03-10T13:00:30Z section needs_attention contacts.sync_conflict \"2 contacts changed on your phone and in Rin. Review the differences.\"",
            "2026-03-10T14:00:00Z push security.access_request \"Carol asked to see your phone number.\" rin://security/inbox [a1]",
            "2026-03-10T14:00:00Z a1 delivered security P-BUD-1",
            "2026-03-11T10:00:30Z push contacts.sync_conflict \"1 contact changed on your phone and in Rin. Review the differences.\" rin://contacts/c4 [c2]",
            "2026-03-11T10:00:30Z c2 delivered within_budget P-BUD-1",
        ])
    }

    @Test("P-BUD-2 candidates released together compete by rank, then age (quiet hours end at 07:00)")
    func rankOrderAtRelease() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T23:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T23:10:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
            {"at":"2026-03-11T01:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-11T02:00:00Z","value":{"type":"user.settings_changed","premium":true}}
            {"at":"2026-03-11T02:00:00Z","value":{"type":"intent","id":"p1","notification":"premium.who_viewed","category":"PREMIUM","data":{"count":1}}}
            {"at":"2026-03-11T03:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            """, until: "2026-03-11T08:00:00Z")
        #expect(d.summary == [
            "2026-03-10T23:00:30Z e1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-10T23:10:30Z s1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T01:00:30Z b1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T02:00:30Z p1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T03:00:30Z d1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T07:00:00Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-11T07:00:00Z b1 delivered quiet_hours_ended P-DND-1",
            "2026-03-11T07:00:00Z push score.updated \"Your Rin Score changed: 72 to 75 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-11T07:00:00Z s1 delivered quiet_hours_ended P-DND-1",
            "2026-03-11T07:00:00Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-11T07:00:00Z d1 delivered quiet_hours_ended P-DND-1",
            "2026-03-11T07:00:00Z e1 suppressed daily_budget P-BUD-1",
            "2026-03-11T07:00:00Z section enrichment_updates contacts.enrichment \"Alice updated their profile. New info available.\"",
            "2026-03-11T07:00:00Z p1 suppressed daily_budget P-BUD-1",
            "2026-03-11T07:00:00Z section network_health premium.who_viewed \"1 person viewed your profile this week.\"",
        ])
    }

    @Test("P-BUD-3 a rank-4 notification may not take the day's last slot")
    func lastSlotReservation() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice","Dan","Eve"],"contact_ids":["c1","c2","c3"]}}}
            {"at":"2026-03-10T13:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            """, until: "2026-03-10T14:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:00:30Z push score.updated \"Your Rin Score changed: 72 to 75 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-10T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-10T11:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-10T11:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-10T12:00:30Z e1 suppressed budget_reserved P-BUD-3",
            "2026-03-10T12:00:30Z section enrichment_updates contacts.enrichment \"Alice and 2 others updated their profiles. New info available.\"",
            "2026-03-10T13:00:30Z push contacts.dedup_ready \"1 possible duplicate found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-10T13:00:30Z d1 delivered within_budget P-BUD-1",
        ])
    }

    @Test("P-BUD-5 more than 5 candidates in a day: the rest is summarised in one digest at 09:00 the next local day")
    func digestNextMorning() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-10T13:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T14:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Dan"],"contact_ids":["c2"]}}}
            {"at":"2026-03-10T15:00:00Z","value":{"type":"intent","id":"e3","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Eve"],"contact_ids":["c3"]}}}
            {"at":"2026-03-10T16:00:00Z","value":{"type":"intent","id":"s2","notification":"score.updated","category":"SCORE","data":{"old":75,"new":78,"label":"Good"}}}
            """, until: "2026-03-11T10:00:00Z")
        #expect(d.decisions == [
            "2026-03-10T10:00:30Z push score.updated \"Your Rin Score changed: 72 to 75 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-10T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-10T11:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-10T11:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-10T12:00:30Z push contacts.dedup_ready \"1 possible duplicate found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-10T12:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-10T13:00:30Z e1 suppressed daily_budget P-BUD-1",
            "2026-03-10T14:00:30Z e2 suppressed daily_budget P-BUD-1",
            "2026-03-10T15:00:30Z e3 digested daily_budget P-BUD-5",
            "2026-03-10T16:00:30Z s2 digested type_cap P-BUD-5",
            "2026-03-11T09:00:00Z push digest.daily \"You have 4 updates. Tap to review.\" rin://home [e1,e2,e3,s2]",
            "2026-03-11T09:00:00Z digest rin.delivery.inbox:0:7:0 delivered within_budget P-BUD-1",
        ])
    }

    /// Issue 15: on busy days the deferrals released at the end of quiet hours spent the budget
    /// before 09:00, and the digest vanished without a record while its intents' `digested`
    /// decisions pointed at it.
    @Test("P-BUD-5 P-BUD-4 a digest due when the day's budget is spent is suppressed with its own decision; its items stay in smart sections")
    func digestSuppressedWhenBudgetSpent() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-10T13:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T14:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Dan"],"contact_ids":["c2"]}}}
            {"at":"2026-03-10T15:00:00Z","value":{"type":"intent","id":"e3","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Eve"],"contact_ids":["c3"]}}}
            {"at":"2026-03-11T03:00:00Z","value":{"type":"intent","id":"s2","notification":"score.updated","category":"SCORE","data":{"old":75,"new":79,"label":"Good"}}}
            {"at":"2026-03-11T03:10:00Z","value":{"type":"intent","id":"b2","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c8","contact_name":"Ann"}}}
            {"at":"2026-03-11T03:20:00Z","value":{"type":"intent","id":"c1","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":1,"contact_ids":["c7"]}}}
            """, until: "2026-03-11T10:00:00Z")
        #expect(d.decisions.filter { $0.hasPrefix("2026-03-11") } == [
            "2026-03-11T03:00:30Z s2 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T03:10:30Z b2 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T03:20:30Z c1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T07:00:00Z push reminder.birthday \"Ann's birthday is today.\" rin://reminders/rm2 [b2]",
            "2026-03-11T07:00:00Z b2 delivered quiet_hours_ended P-DND-1",
            "2026-03-11T07:00:00Z push score.updated \"Your Rin Score changed: 75 to 79 (+4). Tap to see what improved.\" rin://score [s2]",
            "2026-03-11T07:00:00Z s2 delivered quiet_hours_ended P-DND-1",
            "2026-03-11T07:00:00Z push contacts.sync_conflict \"1 contact changed on your phone and in Rin. Review the differences.\" rin://contacts/c7 [c1]",
            "2026-03-11T07:00:00Z c1 delivered quiet_hours_ended P-DND-1",
            "2026-03-11T09:00:00Z digest rin.delivery.inbox:0:7:0 suppressed daily_budget P-BUD-1",
        ])
        #expect(d.decisions.contains("2026-03-10T15:00:30Z e3 digested daily_budget P-BUD-5"))
        // P-BUD-4: what the digest would have summarised is in the user's sections.
        let sectioned = d.summary.filter { $0.contains(" section enrichment_updates ") }
        #expect(sectioned.count == 3, "\(sectioned)")
        #expect(d.summary.filter { $0.contains("push digest.daily") }.isEmpty)
    }

    @Test("P-BUD-5 the digest is skipped when the user opened the app since")
    func digestSkippedAfterOpen() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-10T13:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T14:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Dan"],"contact_ids":["c2"]}}}
            {"at":"2026-03-10T15:00:00Z","value":{"type":"intent","id":"e3","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Eve"],"contact_ids":["c3"]}}}
            {"at":"2026-03-11T08:30:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            """, until: "2026-03-11T10:00:00Z")
        #expect(d.decisions == [
            "2026-03-10T10:00:30Z push score.updated \"Your Rin Score changed: 72 to 75 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-10T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-10T11:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-10T11:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-10T12:00:30Z push contacts.dedup_ready \"1 possible duplicate found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-10T12:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-10T13:00:30Z e1 suppressed daily_budget P-BUD-1",
            "2026-03-10T14:00:30Z e2 suppressed daily_budget P-BUD-1",
            "2026-03-10T15:00:30Z e3 digested daily_budget P-BUD-5",
            "2026-03-11T08:30:00Z digest rin.delivery.inbox:0:7:0 skipped opened_since P-BUD-5",
        ])
    }

    @Test("P-BUD-4 P-WB-2 a notification suppressed by the budget still counts in the since-last-open totals")
    func suppressedCountsSinceLastOpen() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-03T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":70,"new":74,"label":"Good"}}}
            {"at":"2026-03-03T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-03T12:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-03-03T13:00:00Z","value":{"type":"intent","id":"c1","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":1,"contact_ids":["c4"]}}}
            {"at":"2026-03-03T14:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice","Dan"],"contact_ids":["c1","c2"]}}}
            {"at":"2026-03-10T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            """)
        #expect(d.summary == [
            "2026-03-02T10:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-03T10:00:30Z push score.updated \"Your Rin Score changed: 70 to 74 (+4). Tap to see what improved.\" rin://score [s1]",
            "2026-03-03T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-03T11:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-03T11:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-03T12:00:30Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-03T12:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-03T13:00:30Z c1 suppressed daily_budget P-BUD-1",
            "2026-03-03T13:00:30Z section needs_attention contacts.sync_conflict \"1 contact changed on your phone and in Rin. Review the differences.\"",
            "2026-03-03T14:00:30Z e1 suppressed daily_budget P-BUD-1",
            "2026-03-03T14:00:30Z section enrichment_updates contacts.enrichment \"Alice and 1 other updated their profiles. New info available.\"",
            "2026-03-10T10:00:00Z section welcome_back welcome_back Score: 70 → 74 (+4) | 2 dedup suggestions | 2 enrichment updates",
            "2026-03-10T10:00:00Z event retention.app_opened days_since_last_open=8 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
        ])
    }

    @Test("P-BUD-6 day one (local day of sign-up): one dedup and one score notification, nothing else")
    func dayOne() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"Europe/Berlin"}}
            {"at":"2026-03-01T11:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":4}}}
            {"at":"2026-03-01T12:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"new":41,"label":"Building"}}}
            {"at":"2026-03-01T13:00:00Z","value":{"type":"intent","id":"d2","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-03-01T14:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice","Bob"],"contact_ids":["c1","c2"]}}}
            """, until: "2026-03-02T11:00:00Z")
        #expect(d.summary == [
            "2026-03-01T11:00:30Z push contacts.dedup_ready \"4 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-01T11:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-01T12:00:30Z push score.updated \"Your Rin Score is ready: 41.\" rin://score [s1]",
            "2026-03-01T12:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-01T13:00:30Z d2 suppressed day_one_limit P-BUD-6",
            "2026-03-01T13:00:30Z section needs_attention contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\"",
            "2026-03-01T14:00:30Z e1 suppressed day_one_limit P-BUD-6",
            "2026-03-01T14:00:30Z section enrichment_updates contacts.enrichment \"Alice updated their profile. New info available.\"",
            "2026-03-02T10:00:30Z push contacts.enrichment \"Alice and 1 other updated their profiles. New info available.\" rin://home [e2]",
            "2026-03-02T10:00:30Z e2 delivered within_budget P-BUD-1",
        ])
    }
}
