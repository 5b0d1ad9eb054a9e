import DeliveryPolicy
import Testing

/// Inactivity tiers, welcome back, sections, events, streaks, catalog (§1, §5–§8).
@Suite struct LifecycleScenarioTests {
    @Test("P-LAP-2 P-LAP-3 P-LAP-4 P-LAP-5 P-LAP-6 quiet mode at 14 days with a summary, quiet-mode suppression, 30-day value reminder, 60-day dormancy with one email, exit on open")
    func lapseTiers() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"Europe/London"}}
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.settings_changed","email_opt_in":true}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-02T11:00:00Z","value":{"type":"user.action","action":"dedup_suggestion_accepted"}}
            {"at":"2026-03-05T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice","Bob"],"contact_ids":["c1","c2"]}}}
            {"at":"2026-03-06T10:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-03-07T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":70,"new":74,"label":"Good"}}}
            {"at":"2026-03-17T10:00:00Z","value":{"type":"intent","id":"s2","notification":"score.updated","category":"SCORE","data":{"old":74,"new":77,"label":"Good"}}}
            {"at":"2026-03-18T09:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-18T10:00:00Z","value":{"type":"intent","id":"a1","notification":"security.access_request","category":"SECURITY","data":{"request_id":"q1","requester_name":"Carol","field":"email"}}}
            {"at":"2026-03-20T10:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Dan"],"contact_ids":["c3"]}}}
            {"at":"2026-05-02T10:00:00Z","value":{"type":"intent","id":"b2","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm5","contact_id":"c5","contact_name":"Eve"}}}
            {"at":"2026-05-05T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            """, until: "2026-05-05T11:00:00Z")
        #expect(d.summary == [
            "2026-03-02T10:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-05T10:00:30Z push contacts.enrichment \"Alice and 1 other updated their profiles. New info available.\" rin://home [e1]",
            "2026-03-05T10:00:30Z e1 delivered within_budget P-BUD-1",
            "2026-03-06T10:00:30Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-06T10:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-07T10:00:30Z push score.updated \"Your Rin Score changed: 70 to 74 (+4). Tap to see what improved.\" rin://score [s1]",
            "2026-03-07T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-16T00:00:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=SCORE",
            "2026-03-16T00:00:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=15",
            "2026-03-16T00:00:00Z lapsed_summary rin.delivery.inbox:0:7:4 deferred quiet_hours P-DND-1 until 2026-03-16T07:00:00Z",
            "2026-03-16T07:00:00Z push retention.lapsed_summary \"2 enrichment updates and 2 dedup suggestions since your last visit. Score: 74.\" rin://home []",
            "2026-03-16T07:00:00Z lapsed_summary rin.delivery.inbox:0:7:4 delivered quiet_hours_ended P-DND-1",
            "2026-03-17T10:00:30Z s2 suppressed quiet_mode P-LAP-3",
            "2026-03-17T10:00:30Z section score_changed score.updated \"Your Rin Score changed: 74 to 77 (+3). Tap to see what improved.\"",
            "2026-03-18T09:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-18T09:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-18T10:00:00Z push security.access_request \"Carol asked to see your email.\" rin://security/inbox [a1]",
            "2026-03-18T10:00:00Z a1 delivered security P-BUD-1",
            "2026-03-20T10:00:30Z e2 suppressed quiet_mode P-LAP-3",
            "2026-03-20T10:00:30Z section enrichment_updates contacts.enrichment \"Dan updated their profile. New info available.\"",
            "2026-03-31T23:00:00Z event retention.churn_signal_detected signal_type=no_action_30d user_age_days=31",
            "2026-03-31T23:00:00Z value_reminder rin.delivery.inbox:0:11:2 deferred quiet_hours P-DND-1 until 2026-04-01T06:00:00Z",
            "2026-04-01T06:00:00Z push retention.value_reminder \"Your contacts have been syncing in the background. 3 new enrichments available.\" rin://home []",
            "2026-04-01T06:00:00Z value_reminder rin.delivery.inbox:0:11:2 delivered quiet_hours_ended P-DND-1",
            "2026-04-30T23:00:00Z email retention.lapsed_summary \"3 enrichment updates and 2 dedup suggestions since your last visit. Score: 77.\" rin://home []",
            "2026-04-30T23:00:00Z dormant_email rin.delivery.inbox:0:11:7 delivered within_budget P-BUD-1",
            "2026-05-02T10:00:30Z b2 suppressed dormant P-LAP-5",
            "2026-05-02T10:00:30Z section upcoming reminder.birthday:rm5 \"Eve\'s birthday is today.\"",
            "2026-05-05T10:00:00Z event retention.quiet_mode_exited days_in_quiet_mode=50",
            "2026-05-05T10:00:00Z event retention.lapsed_reengaged days_inactive=64 entry_source=organic reengagement_type=organic",
            "2026-05-05T10:00:00Z section welcome_back welcome_back Score: 70 → 77 (+7) | 2 dedup suggestions | 1 access request pending | 3 enrichment updates | 1 birthday this week",
            "2026-05-05T10:00:00Z event retention.app_opened days_since_last_open=64 entry_source=organic is_lapsed=true streak_current=1 streak_longest=1",
        ])
    }

    /// Issue 15: the allowance counted every delivery of the last 7 days, so a dedup delivered
    /// three days before quiet mode began used it up and the summary was silently lost.
    @Test("P-LAP-3 the quiet-mode allowance counts only deliveries made in quiet mode: a dedup delivered 3 days before the 14th day does not stop the 14-day summary")
    func quietModeAllowanceStartsWithQuietMode() throws {
        func run(dedupOn day: String) throws -> [String] {
            try Scenario.run("""
                {"at":"2026-10-01T08:00:00Z","value":{"type":"user.signed_up","time_zone":"Europe/Lisbon"}}
                {"at":"2026-10-01T09:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
                {"at":"2026-10-03T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Ana"],"contact_ids":["c1"]}}}
                {"at":"\(day)T10:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
                """, until: "2026-10-16T00:00:00Z").summary.filter { !$0.contains("event retention.app_opened") }
        }
        let summary = [
            "2026-10-14T23:00:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=CONTACTS",
            "2026-10-14T23:00:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=14",
            "2026-10-14T23:00:00Z lapsed_summary rin.delivery.inbox:0:4:4 deferred quiet_hours P-DND-1 until 2026-10-15T06:00:00Z",
            "2026-10-15T06:00:00Z push retention.lapsed_summary \"1 enrichment update and 2 dedup suggestions since your last visit.\" rin://home []",
            "2026-10-15T06:00:00Z lapsed_summary rin.delivery.inbox:0:4:4 delivered quiet_hours_ended P-DND-1",
        ]
        let delivered = [
            "2026-10-03T10:00:30Z push contacts.enrichment \"Ana updated their profile. New info available.\" rin://contacts/c1 [e1]",
            "2026-10-03T10:00:30Z e1 delivered within_budget P-BUD-1",
        ]
        let dedup = { (day: String) in [
            "\(day)T10:00:30Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "\(day)T10:00:30Z d1 delivered within_budget P-BUD-1",
        ] }
        #expect(try run(dedupOn: "2026-10-12") == delivered + dedup("2026-10-12") + summary)
        #expect(try run(dedupOn: "2026-10-06") == delivered + dedup("2026-10-06") + summary)
    }

    @Test("P-LAP-3 P-LAP-4 a value reminder 6 days after the summary is held back by the quiet-mode allowance, with a decision; the 30-day one goes out")
    func quietWeekUsedHasADecision() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-11T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-12T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Ana"],"contact_ids":["c1"]}}}
            """, until: "2026-04-11T00:00:00Z")
        #expect(d.decisions.filter { !$0.contains(" e1 ") && !$0.contains("[e1]") } == [
            "2026-03-25T00:00:00Z lapsed_summary rin.delivery.inbox:0:3:4 deferred quiet_hours P-DND-1 until 2026-03-25T07:00:00Z",
            "2026-03-25T07:00:00Z push retention.lapsed_summary \"1 enrichment update and 0 dedup suggestions since your last visit.\" rin://home []",
            "2026-03-25T07:00:00Z lapsed_summary rin.delivery.inbox:0:3:4 delivered quiet_hours_ended P-DND-1",
            "2026-03-31T00:00:00Z value_reminder rin.delivery.inbox:0:3:9 deferred quiet_hours P-DND-1 until 2026-03-31T07:00:00Z",
            "2026-03-31T07:00:00Z value_reminder rin.delivery.inbox:0:3:9 suppressed quiet_week_used P-LAP-3",
            "2026-04-10T00:00:00Z value_reminder rin.delivery.inbox:0:3:12 deferred quiet_hours P-DND-1 until 2026-04-10T07:00:00Z",
            "2026-04-10T07:00:00Z push retention.value_reminder \"Your contacts have been syncing in the background. 1 new enrichment available.\" rin://home []",
            "2026-04-10T07:00:00Z value_reminder rin.delivery.inbox:0:3:12 delivered quiet_hours_ended P-DND-1",
        ])
    }

    @Test("P-PREF-1 P-BUD-5 engine-made notifications stopped by the user's settings get decisions: push turned off, digest skipped after an open")
    func settingsStopEngineNotifications() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.settings_changed","push_enabled":false}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-03T10:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":4}}}
            """, until: "2026-03-17T00:00:00Z")
        #expect(d.decisions == [
            "2026-03-03T10:00:30Z d1 suppressed permission_denied P-PREF-1",
            "2026-03-16T00:00:00Z lapsed_summary rin.delivery.inbox:0:4:4 suppressed push_disabled P-PREF-1",
        ])
    }

    @Test("P-LAP-1 up to 13 days inactive is normal; the 14th local day starts quiet mode")
    func normalUntilDayFourteen() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-15T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":70,"new":74,"label":"Good"}}}
            {"at":"2026-03-15T23:59:00Z","value":{"type":"tick"}}
            """, until: "2026-03-16T00:00:00Z")
        #expect(d.summary == [
            "2026-03-02T10:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-15T10:00:30Z push score.updated \"Your Rin Score changed: 70 to 74 (+4). Tap to see what improved.\" rin://score [s1]",
            "2026-03-15T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-16T00:00:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=SCORE",
            "2026-03-16T00:00:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=15",
            "2026-03-16T00:00:00Z lapsed_summary rin.delivery.inbox:0:4:2 deferred quiet_hours P-DND-1 until 2026-03-16T07:00:00Z",
        ])
    }

    @Test("P-LAP-2 P-TIME-1 quiet mode at local midnight of the 14th day (Asia/Kolkata, +05:30); nothing accumulated, no summary")
    func quietModeWithoutSummary() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"Asia/Kolkata"}}
            {"at":"2026-03-02T04:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            """, until: "2026-03-17T00:00:00Z")
        #expect(d.summary == [
            "2026-03-02T04:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-15T18:30:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=null",
            "2026-03-15T18:30:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=15",
            "2026-03-15T18:30:00Z lapsed_summary rin.delivery.inbox:0:2:2 deferred quiet_hours P-DND-1 until 2026-03-16T01:30:00Z",
            "2026-03-16T01:30:00Z lapsed_summary rin.delivery.inbox:0:2:2 skipped nothing_accumulated P-LAP-2",
        ])
    }

    @Test("P-LAP-5 dormant after 60 days: no push but security; no email without the opt-in")
    func dormantWithoutEmail() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-05-01T12:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-05-02T10:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-05-03T03:00:00Z","value":{"type":"intent","id":"a1","notification":"security.new_signin","category":"SECURITY","data":{"detail":"New sign-in from Safari on macOS."}}}
            """, until: "2026-05-04T00:00:00Z")
        #expect(d.summary == [
            "2026-03-02T10:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-16T00:00:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=null",
            "2026-03-16T00:00:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=15",
            "2026-03-16T00:00:00Z lapsed_summary rin.delivery.inbox:0:2:2 deferred quiet_hours P-DND-1 until 2026-03-16T07:00:00Z",
            "2026-03-16T07:00:00Z lapsed_summary rin.delivery.inbox:0:2:2 skipped nothing_accumulated P-LAP-2",
            "2026-03-31T00:00:00Z event retention.churn_signal_detected signal_type=no_action_30d user_age_days=30",
            "2026-03-31T00:00:00Z value_reminder rin.delivery.inbox:0:2:6 deferred quiet_hours P-DND-1 until 2026-03-31T07:00:00Z",
            "2026-03-31T07:00:00Z value_reminder rin.delivery.inbox:0:2:6 skipped no_new_enrichments P-LAP-4",
            "2026-04-01T00:00:00Z value_reminder rin.delivery.inbox:0:2:9 deferred quiet_hours P-DND-1 until 2026-04-01T07:00:00Z",
            "2026-04-01T07:00:00Z value_reminder rin.delivery.inbox:0:2:9 skipped no_new_enrichments P-LAP-4",
            "2026-05-01T00:00:00Z dormant_email rin.delivery.inbox:0:2:12 suppressed email_not_opted_in P-LAP-5",
            "2026-05-01T12:00:30Z d1 suppressed dormant P-LAP-5",
            "2026-05-01T12:00:30Z section needs_attention contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\"",
            "2026-05-02T10:00:30Z b1 suppressed dormant P-LAP-5",
            "2026-05-02T10:00:30Z section upcoming reminder.birthday:rm1 \"Bob\'s birthday is today.\"",
            "2026-05-03T03:00:00Z push security.new_signin \"New sign-in from Safari on macOS.\" rin://security/inbox [a1]",
            "2026-05-03T03:00:00Z a1 delivered security P-BUD-1",
        ])
    }

    @Test("P-LAP-6 P-WB-1 P-EVT-1 P-EVT-2 re-engaged through the 14-day summary; streaks; user_was_active; user_age_days")
    func reengagedThroughSummary() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-03T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-03T18:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-05T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-06T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-06T11:00:00Z","value":{"type":"section.item","section":"recently_added","item_id":"sync-1","item":{"count":4}}}
            {"at":"2026-03-06T12:00:00Z","value":{"type":"retention.event","event":"retention.value_event_delivered","properties":{"event_type":"contact_sync_completed"}}}
            {"at":"2026-03-06T12:00:00Z","value":{"type":"retention.event","event":"retention.churn_signal_detected","properties":{"signal_type":"score_declining"}}}
            {"at":"2026-03-19T07:05:00Z","value":{"type":"app.opened","entry_source":"notification","notification_id":"rin.delivery.inbox:0:9:2"}}
            {"at":"2026-03-19T07:10:00Z","value":{"type":"retention.event","event":"retention.value_event_delivered","properties":{"event_type":"score_updated"}}}
            """)
        #expect(d.summary == [
            "2026-03-02T10:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-03T10:00:00Z event retention.app_opened days_since_last_open=1 entry_source=organic is_lapsed=false streak_current=2 streak_longest=2",
            "2026-03-03T18:00:00Z event retention.app_opened days_since_last_open=0 entry_source=organic is_lapsed=false streak_current=2 streak_longest=2",
            "2026-03-05T10:00:00Z event retention.app_opened days_since_last_open=2 entry_source=organic is_lapsed=false streak_current=1 streak_longest=2",
            "2026-03-06T10:00:30Z push contacts.enrichment \"Alice updated their profile. New info available.\" rin://contacts/c1 [e1]",
            "2026-03-06T10:00:30Z e1 delivered within_budget P-BUD-1",
            "2026-03-06T11:00:00Z section recently_added sync-1",
            "2026-03-06T12:00:00Z event retention.value_event_delivered event_type=contact_sync_completed user_was_active=false",
            "2026-03-06T12:00:00Z event retention.churn_signal_detected signal_type=score_declining user_age_days=5",
            "2026-03-19T00:00:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=CONTACTS",
            "2026-03-19T00:00:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=18",
            "2026-03-19T00:00:00Z lapsed_summary rin.delivery.inbox:0:9:2 deferred quiet_hours P-DND-1 until 2026-03-19T07:00:00Z",
            "2026-03-19T07:00:00Z push retention.lapsed_summary \"1 enrichment update and 0 dedup suggestions since your last visit.\" rin://home []",
            "2026-03-19T07:00:00Z lapsed_summary rin.delivery.inbox:0:9:2 delivered quiet_hours_ended P-DND-1",
            "2026-03-19T07:05:00Z event retention.quiet_mode_exited days_in_quiet_mode=0",
            "2026-03-19T07:05:00Z event retention.lapsed_reengaged days_inactive=14 entry_source=notification reengagement_type=14d_summary",
            "2026-03-19T07:05:00Z section welcome_back welcome_back 1 enrichment update | 4 new contacts from sync",
            "2026-03-19T07:05:00Z event retention.app_opened days_since_last_open=14 entry_source=notification is_lapsed=true streak_current=1 streak_longest=2",
            "2026-03-19T07:10:00Z event retention.value_event_delivered event_type=score_updated user_was_active=true",
        ])
    }

    @Test("P-LAP-4 no intentional action for 30 days sends the value reminder even to a user who opens the app")
    func noIntentionalAction() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-10T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-20T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-25T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice","Bob","Cid"],"contact_ids":["c1","c2","c3"]}}}
            {"at":"2026-03-30T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-30T11:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Dan","Eve"],"contact_ids":["c4","c5"]}}}
            """, until: "2026-03-31T08:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:00:00Z event retention.app_opened days_since_last_open=9 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-20T10:00:00Z event retention.app_opened days_since_last_open=10 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-25T10:00:30Z push contacts.enrichment \"Alice and 2 others updated their profiles. New info available.\" rin://home [e1]",
            "2026-03-25T10:00:30Z e1 delivered within_budget P-BUD-1",
            "2026-03-30T10:00:00Z section welcome_back welcome_back 3 enrichment updates",
            "2026-03-30T10:00:00Z event retention.app_opened days_since_last_open=10 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-30T11:00:30Z push contacts.enrichment \"Dan and 1 other updated their profiles. New info available.\" rin://home [e2]",
            "2026-03-30T11:00:30Z e2 delivered within_budget P-BUD-1",
            "2026-03-31T00:00:00Z event retention.churn_signal_detected signal_type=no_action_30d user_age_days=30",
            "2026-03-31T00:00:00Z value_reminder rin.delivery.inbox:0:6:3 deferred quiet_hours P-DND-1 until 2026-03-31T07:00:00Z",
            "2026-03-31T07:00:00Z push retention.value_reminder \"Your contacts have been syncing in the background. 2 new enrichments available.\" rin://home []",
            "2026-03-31T07:00:00Z value_reminder rin.delivery.inbox:0:6:3 delivered quiet_hours_ended P-DND-1",
        ])
    }

    @Test("P-LAP-3 quiet week choice top_pending: the most important held-back notification instead of the summary")
    func quietWeekTopPending() throws {
        let yaml = try String(contentsOfFile: ProfileTests.rinPath, encoding: .utf8)
            .replacingOccurrences(of: "quiet_week_choice: summary", with: "quiet_week_choice: top_pending")
        let profile = try PolicyProfile.load(yaml: yaml)
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-02T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":70,"new":74,"label":"Good"}}}
            {"at":"2026-03-02T11:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-02T12:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-02T13:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":3}}}
            {"at":"2026-03-02T14:00:00Z","value":{"type":"intent","id":"d2","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            """, until: "2026-03-15T08:00:00Z", profile: profile)
        #expect(d.summary == [
            "2026-03-02T10:00:30Z push score.updated \"Your Rin Score changed: 70 to 74 (+4). Tap to see what improved.\" rin://score [s1]",
            "2026-03-02T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-02T11:00:30Z push reminder.birthday \"Bob\'s birthday is today.\" rin://reminders/rm1 [b1]",
            "2026-03-02T11:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-02T12:00:30Z e1 suppressed budget_reserved P-BUD-3",
            "2026-03-02T12:00:30Z section enrichment_updates contacts.enrichment \"Alice updated their profile. New info available.\"",
            "2026-03-02T13:00:30Z push contacts.dedup_ready \"3 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-02T13:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-02T14:00:30Z d2 suppressed type_cap P-BUD-1",
            "2026-03-02T14:00:30Z section needs_attention contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\"",
            "2026-03-15T00:00:00Z event retention.quiet_mode_entered days_inactive=14 last_notification_category=CONTACTS",
            "2026-03-15T00:00:00Z event retention.churn_signal_detected signal_type=14d_inactive user_age_days=14",
            "2026-03-15T00:00:00Z top_pending rin.delivery.inbox:0:6:4 deferred quiet_hours P-DND-1 until 2026-03-15T07:00:00Z",
            "2026-03-15T07:00:00Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d2]",
            "2026-03-15T07:00:00Z top_pending rin.delivery.inbox:0:6:4 delivered quiet_hours_ended P-DND-1",
        ])
    }

    @Test("P-WB-1 P-WB-2 at most 5 lines in order, then 'and N more updates'; no card when nothing changed")
    func welcomeBack() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
            {"at":"2026-03-08T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-09T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":75,"new":71,"label":"Good"}}}
            {"at":"2026-03-09T10:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-09T11:00:00Z","value":{"type":"intent","id":"a1","notification":"security.access_request","category":"SECURITY","data":{"request_id":"q1","requester_name":"Carol","field":"email"}}}
            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice","Bob"],"contact_ids":["c1","c2"]}}}
            {"at":"2026-03-11T09:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
            {"at":"2026-03-12T09:00:00Z","value":{"type":"intent","id":"f1","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-12T09:00"}}}
            {"at":"2026-03-13T09:00:00Z","value":{"type":"section.item","section":"recently_added","item_id":"sync-1","item":{"count":1}}}
            {"at":"2026-03-16T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-24T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            """)
        #expect(d.summary.filter { $0.contains("welcome_back") || $0.contains("app_opened") } == [
            "2026-03-08T10:00:00Z event retention.app_opened days_since_last_open=7 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-16T10:00:00Z section welcome_back welcome_back Score: 75 → 71 (-4) | 1 dedup suggestion | 1 access request pending | 2 enrichment updates | 1 birthday this week | and 2 more updates",
            "2026-03-16T10:00:00Z event retention.app_opened days_since_last_open=8 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
            "2026-03-24T10:00:00Z event retention.app_opened days_since_last_open=8 entry_source=organic is_lapsed=false streak_current=1 streak_longest=1",
        ])
    }

    @Test("P-SEC-1 upstream section items pass through with their expiry; P-SEC-2 suppressed content lands in its section")
    func sections() throws {
        let d = try Scenario.run(BudgetScenarioTests.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-10T10:01:00Z","value":{"type":"section.item","section":"score_changed","item_id":"score","item":{"label":"Good"},"expires_at":"2026-03-12T10:01:00Z"}}
            {"at":"2026-03-10T10:02:00Z","value":{"type":"section.item","section":"nowhere","item_id":"x","item":{}}}
            {"at":"2026-03-10T23:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":60,"new":58,"label":"Building"}}}
            {"at":"2026-03-11T07:00:10Z","value":{"type":"intent","id":"s2","notification":"score.updated","category":"SCORE","data":{"old":58,"new":56,"label":"Building"}}}
            """, until: "2026-03-11T08:00:00Z")
        #expect(d.jsonl.filter { $0.contains("rin.home.sections") } + d.errors == [
            "{\"at\":\"2026-03-10T10:01:00Z\",\"topic\":\"rin.home.sections\",\"key\":\"u1\",\"value\":{\"expires_at\":\"2026-03-12T10:01:00Z\",\"id\":\"rin.delivery.inbox:0:2:0\",\"item\":{\"label\":\"Good\"},\"item_id\":\"score\",\"section\":\"score_changed\",\"type\":\"section.item\",\"user_id\":\"u1\",\"v\":1}}",
            "{\"at\":\"2026-03-11T07:00:40Z\",\"topic\":\"rin.home.sections\",\"key\":\"u1\",\"value\":{\"expires_at\":\"2026-03-13T07:00:40Z\",\"id\":\"rin.delivery.inbox:0:6:1\",\"item\":{\"body\":\"Your Rin Score changed: 58 to 56 (-2). Tap to see what shifted.\",\"deep_link\":\"rin://score\",\"intent_ids\":[\"s2\"],\"notification\":\"score.updated\",\"reason\":\"type_cap\",\"title\":\"Rin Score\"},\"item_id\":\"score.updated\",\"section\":\"score_changed\",\"type\":\"section.item\",\"user_id\":\"u1\",\"v\":1}}",
            "2026-03-10T10:02:00Z field \'section\' is \'nowhere\', not one of circle_suggestions, enrichment_updates, needs_attention, network_health, profile_completion, recently_added, score_changed, upcoming, welcome_back",
        ])
    }

    @Test("P-CAT-1 unknown types, wrong categories, engine-only types and missing data are rejected, never guessed")
    func catalogRejects() throws {
        let d = try Scenario.run(BudgetScenarioTests.signup + """

            {"at":"2026-03-10T11:02:00Z","value":{"type":"intent","id":"x1","notification":"score.exploded","category":"SCORE","data":{}}}
            {"at":"2026-03-10T11:03:00Z","value":{"type":"intent","id":"x2","notification":"score.updated","category":"CONTACTS","data":{"new":3}}}
            {"at":"2026-03-10T11:04:00Z","value":{"type":"intent","id":"x3","notification":"contacts.dedup_ready","category":"CONTACTS","data":{}}}
            {"at":"2026-03-10T11:05:00Z","value":{"type":"intent","id":"x4","notification":"digest.daily","category":"DIGEST","data":{}}}
            {"at":"2026-03-10T11:06:00Z","value":{"type":"intent","id":"x5","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Al"]}}}
            {"at":"2026-03-10T11:07:00Z","value":{"type":"score.computed","batch_id":"b","computed_at":"2026-03-10T11:07:00Z","score":3,"components":{"quality":1,"position":1,"stability":1,"trust":1}}}
            """, until: "2026-03-10T12:00:00Z")
        #expect(d.records.isEmpty)
        #expect(d.errors == [
            "2026-03-10T11:02:00Z unknown notification type \'score.exploded\' (P-CAT-1: not in the \'rin\' catalog)",
            "2026-03-10T11:03:00Z field \'category\' is \'CONTACTS\', but \'score.updated\' is in category \'SCORE\'",
            "2026-03-10T11:04:00Z missing required field \'data.count\' (contacts.dedup_ready needs it)",
            "2026-03-10T11:05:00Z notification type \'digest.daily\' is made by the delivery worker itself and cannot be requested",
            "2026-03-10T11:06:00Z missing required field \'data.contact_ids\' (contacts.enrichment\'s deep link needs a contact)",
            "2026-03-10T11:07:00Z type \'score.computed\' does not belong on topic \'rin.delivery.inbox\'",
        ])
    }

    @Test("P-CAT-2 a delivery carries notification_id, deep link, category, merged intent ids; ids come from log coordinates")
    func deliveryRecord() throws {
        let d = try Scenario.run(BudgetScenarioTests.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"c1","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":1,"contact_ids":["c42"]}}}
            {"at":"2026-03-10T10:00:05Z","value":{"type":"intent","id":"c2","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":1,"contact_ids":["c42"]}}}
            {"at":"2026-03-10T10:01:00Z","value":{"type":"tick"}}
            """)
        #expect(d.jsonl == [
            "{\"at\":\"2026-03-10T10:00:30Z\",\"topic\":\"rin.notify.deliveries\",\"key\":\"u1\",\"value\":{\"body\":\"2 contacts changed on your phone and in Rin. Review the differences.\",\"category\":\"CONTACTS\",\"channel\":\"push\",\"deep_link\":\"rin://contacts/c42\",\"id\":\"rin.delivery.inbox:0:3:0\",\"merged_intents\":[\"c1\",\"c2\"],\"notification\":\"contacts.sync_conflict\",\"notification_id\":\"rin.delivery.inbox:0:1:0\",\"title\":\"Contacts\",\"type\":\"delivery\",\"user_id\":\"u1\",\"v\":1}}",
            "{\"at\":\"2026-03-10T10:00:30Z\",\"topic\":\"rin.notify.decisions\",\"key\":\"u1\",\"value\":{\"id\":\"rin.delivery.inbox:0:3:1\",\"intent_id\":\"c1\",\"notification_id\":\"rin.delivery.inbox:0:1:0\",\"outcome\":\"delivered\",\"reason\":\"within_budget\",\"rule\":\"P-BUD-1\",\"type\":\"decision\",\"user_id\":\"u1\",\"v\":1}}",
            "{\"at\":\"2026-03-10T10:00:30Z\",\"topic\":\"rin.notify.decisions\",\"key\":\"u1\",\"value\":{\"id\":\"rin.delivery.inbox:0:3:2\",\"intent_id\":\"c2\",\"notification_id\":\"rin.delivery.inbox:0:1:0\",\"outcome\":\"merged\",\"reason\":\"coalesced\",\"rule\":\"P-COAL-1\",\"type\":\"decision\",\"user_id\":\"u1\",\"v\":1}}",
        ])
    }
}
