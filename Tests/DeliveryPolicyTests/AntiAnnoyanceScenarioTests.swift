import DeliveryPolicy
import Testing

/// Coalescing, duplicates, idempotency, cool-down, quiet hours, expiry, preferences (§3).
@Suite struct AntiAnnoyanceScenarioTests {
    static let signup = BudgetScenarioTests.signup

    @Test("P-COAL-1 one window per category from the first arrival: names, counts, score first old / last new, milestone wins")
    func coalescing() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T10:00:10Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Dan","Eve"],"contact_ids":["c2","c3"]}}}
            {"at":"2026-03-10T10:00:29Z","value":{"type":"intent","id":"e3","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Fay"],"contact_ids":["c4"]}}}
            {"at":"2026-03-10T10:00:31Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-03-10T10:00:40Z","value":{"type":"intent","id":"d2","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":58,"new":60,"label":"Good"}}}
            {"at":"2026-03-10T11:00:05Z","value":{"type":"intent","id":"m1","notification":"score.milestone","category":"SCORE","data":{"label":"Good","threshold":60,"score":60}}}
            {"at":"2026-03-10T11:00:20Z","value":{"type":"intent","id":"s2","notification":"score.updated","category":"SCORE","data":{"old":60,"new":63,"label":"Good"}}}
            """, until: "2026-03-10T12:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:00:30Z push contacts.enrichment \"Alice and 3 others updated their profiles. New info available.\" rin://home [e1,e2,e3]",
            "2026-03-10T10:00:30Z e1 delivered within_budget P-BUD-1",
            "2026-03-10T10:00:30Z e2 merged coalesced P-COAL-1",
            "2026-03-10T10:00:30Z e3 merged coalesced P-COAL-1",
            "2026-03-10T10:01:01Z push contacts.dedup_ready \"3 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1,d2]",
            "2026-03-10T10:01:01Z d1 delivered within_budget P-BUD-1",
            "2026-03-10T10:01:01Z d2 merged coalesced P-COAL-1",
            "2026-03-10T11:00:30Z push score.milestone \"Your Rin Score reached Good (60). Your network is growing stronger.\" rin://score [s1,m1,s2]",
            "2026-03-10T11:00:30Z m1 delivered within_budget P-BUD-1",
            "2026-03-10T11:00:30Z s1 merged coalesced P-COAL-1",
            "2026-03-10T11:00:30Z s2 merged coalesced P-COAL-1",
            "2026-03-10T11:00:30Z section score_changed score.updated \"Your Rin Score changed: 58 to 63 (+5). Tap to see what improved.\"",
        ])
    }

    @Test("P-COAL-1 birthdays merge by name: two names, then 'and N others'; one per contact per year")
    func coalescingBirthdays() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T09:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c1","contact_name":"Alice"}}}
            {"at":"2026-03-10T09:00:00Z","value":{"type":"intent","id":"b2","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c2","contact_name":"Bob"}}}
            {"at":"2026-03-11T09:00:00Z","value":{"type":"intent","id":"b3","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm3","contact_id":"c3","contact_name":"Cid"}}}
            {"at":"2026-03-11T09:00:00Z","value":{"type":"intent","id":"b4","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm4","contact_id":"c4","contact_name":"Dee"}}}
            {"at":"2026-03-11T09:00:01Z","value":{"type":"intent","id":"b5","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm5","contact_id":"c5","contact_name":"Eve"}}}
            {"at":"2026-03-11T09:00:01Z","value":{"type":"intent","id":"b6","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c1","contact_name":"Alice"}}}
            """, until: "2026-03-12T00:00:00Z")
        #expect(d.summary == [
            "2026-03-10T09:00:30Z push reminder.birthday \"Alice and Bob have birthdays today.\" rin://home [b1,b2]",
            "2026-03-10T09:00:30Z b1 delivered within_budget P-BUD-1",
            "2026-03-10T09:00:30Z b2 merged coalesced P-COAL-1",
            "2026-03-11T09:00:30Z b6 suppressed type_cap P-BUD-1",
            "2026-03-11T09:00:30Z section upcoming reminder.birthday:rm1 \"Alice\'s birthday is today.\"",
            "2026-03-11T09:00:30Z push reminder.birthday \"Cid and 2 others have birthdays today.\" rin://home [b3,b4,b5]",
            "2026-03-11T09:00:30Z b3 delivered within_budget P-BUD-1",
            "2026-03-11T09:00:30Z b4 merged coalesced P-COAL-1",
            "2026-03-11T09:00:30Z b5 merged coalesced P-COAL-1",
        ])
    }

    @Test("P-DUP-1 same type and body within 60 minutes is suppressed")
    func duplicateContent() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"f1","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-10T10:00"}}}
            {"at":"2026-03-10T10:40:00Z","value":{"type":"intent","id":"f2","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-10T10:40"}}}
            {"at":"2026-03-10T11:01:00Z","value":{"type":"intent","id":"f3","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-10T11:01"}}}
            """, until: "2026-03-10T12:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:00:30Z push reminder.followup \"Follow up with Fay: call\" rin://reminders/rm2 [f1]",
            "2026-03-10T10:00:30Z f1 delivered within_budget P-BUD-1",
            "2026-03-10T10:40:30Z f2 suppressed duplicate_content P-DUP-1",
            "2026-03-10T10:40:30Z section upcoming reminder.followup:rm2 \"Follow up with Fay: call\"",
            "2026-03-10T11:01:30Z push reminder.followup \"Follow up with Fay: call\" rin://reminders/rm2 [f3]",
            "2026-03-10T11:01:30Z f3 delivered within_budget P-BUD-1",
        ])
    }

    @Test("P-IDEM-1 an intent id already seen is ignored, also after the state was serialised and restored")
    func idempotency() throws {
        let first = #"{"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"f1","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-10T10:00"}}}"#
        var d = try Scenario.run(Self.signup + "\n" + first + "\n" + first.replacingOccurrences(of: "10:00:00Z", with: "10:00:10Z"))
        try d.run(until: "2026-03-10T11:00:00Z")
        let survived = try d.restart()
        // The delivered follow-up's content hash is ≥ 2^63: the snapshot must keep it exactly.
        #expect(survived, "the restored delivery state differs from the one written")
        try d.feed(first.replacingOccurrences(of: "10:00:00Z", with: "11:30:00Z"))
        try d.run(until: "2026-03-10T12:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:00:30Z push reminder.followup \"Follow up with Fay: call\" rin://reminders/rm2 [f1]",
            "2026-03-10T10:00:30Z f1 delivered within_budget P-BUD-1",
        ])
    }

    @Test("P-COOL-1 three dismissals of a category in 24 h: at most one delivery per 72 h for 7 days; REMINDER exempt")
    func dismissalCooldown() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T09:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-10T10:00:00Z","value":{"type":"notification.dismissed","notification_id":"n1","category":"SCORE"}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"notification.dismissed","notification_id":"n2","category":"SCORE"}}
            {"at":"2026-03-10T14:00:00Z","value":{"type":"notification.dismissed","notification_id":"n3","category":"SCORE"}}
            {"at":"2026-03-10T15:00:00Z","value":{"type":"notification.dismissed","notification_id":"n4","category":"REMINDER"}}
            {"at":"2026-03-10T15:01:00Z","value":{"type":"notification.dismissed","notification_id":"n5","category":"REMINDER"}}
            {"at":"2026-03-10T15:02:00Z","value":{"type":"notification.dismissed","notification_id":"n6","category":"REMINDER"}}
            {"at":"2026-03-11T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":50,"new":53,"label":"Building"}}}
            {"at":"2026-03-11T11:00:00Z","value":{"type":"intent","id":"f1","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-11T11:00"}}}
            {"at":"2026-03-11T12:00:00Z","value":{"type":"intent","id":"f2","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm3","contact_id":"c7","contact_name":"Gus","note":"lunch","scheduled_local":"2026-03-11T12:00"}}}
            {"at":"2026-03-12T10:00:00Z","value":{"type":"intent","id":"s2","notification":"score.updated","category":"SCORE","data":{"old":53,"new":56,"label":"Building"}}}
            {"at":"2026-03-14T10:01:00Z","value":{"type":"intent","id":"s3","notification":"score.updated","category":"SCORE","data":{"old":56,"new":58,"label":"Building"}}}
            """, until: "2026-03-14T12:00:00Z")
        #expect(d.decisions == [
            "2026-03-11T10:00:30Z push score.updated \"Your Rin Score changed: 50 to 53 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-11T10:00:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-11T11:00:30Z push reminder.followup \"Follow up with Fay: call\" rin://reminders/rm2 [f1]",
            "2026-03-11T11:00:30Z f1 delivered within_budget P-BUD-1",
            "2026-03-11T12:00:30Z push reminder.followup \"Follow up with Gus: lunch\" rin://reminders/rm3 [f2]",
            "2026-03-11T12:00:30Z f2 delivered within_budget P-BUD-1",
            "2026-03-12T10:00:30Z s2 suppressed category_cooldown P-COOL-1",
            "2026-03-14T10:01:30Z push score.updated \"Your Rin Score changed: 56 to 58 (+2). Tap to see what improved.\" rin://score [s3]",
            "2026-03-14T10:01:30Z s3 delivered within_budget P-BUD-1",
        ])
    }

    /// Issue 15, the same mistake as P-LAP-3's: the notifications the user dismissed into the
    /// cool-down were counted against it, so even its one allowed delivery was held back.
    @Test("P-COOL-1 at most one delivery per 72 h counts deliveries made in the cool-down, not the ones dismissed into it")
    func cooldownCountsFromItsStart() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T09:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Ana"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":1}}}
            {"at":"2026-03-10T12:00:00Z","value":{"type":"intent","id":"c1","notification":"contacts.sync_conflict","category":"CONTACTS","data":{"count":1,"contact_ids":["c9"]}}}
            {"at":"2026-03-10T13:00:00Z","value":{"type":"notification.dismissed","notification_id":"n1","category":"CONTACTS"}}
            {"at":"2026-03-10T13:10:00Z","value":{"type":"notification.dismissed","notification_id":"n2","category":"CONTACTS"}}
            {"at":"2026-03-10T13:20:00Z","value":{"type":"notification.dismissed","notification_id":"n3","category":"CONTACTS"}}
            {"at":"2026-03-11T10:00:00Z","value":{"type":"intent","id":"d2","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-03-11T15:00:00Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Bo"],"contact_ids":["c2"]}}}
            {"at":"2026-03-14T11:00:00Z","value":{"type":"intent","id":"e3","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Cy"],"contact_ids":["c3"]}}}
            """, until: "2026-03-14T12:00:00Z")
        #expect(d.decisions == [
            "2026-03-10T10:00:30Z push contacts.enrichment \"Ana updated their profile. New info available.\" rin://contacts/c1 [e1]",
            "2026-03-10T10:00:30Z e1 delivered within_budget P-BUD-1",
            "2026-03-10T11:00:30Z push contacts.dedup_ready \"1 possible duplicate found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-10T11:00:30Z d1 delivered within_budget P-BUD-1",
            "2026-03-10T12:00:30Z push contacts.sync_conflict \"1 contact changed on your phone and in Rin. Review the differences.\" rin://contacts/c9 [c1]",
            "2026-03-10T12:00:30Z c1 delivered within_budget P-BUD-1",
            // The cool-down began at 13:20; the three deliveries above came before it.
            "2026-03-11T10:00:30Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d2]",
            "2026-03-11T10:00:30Z d2 delivered within_budget P-BUD-1",
            "2026-03-11T15:00:30Z e2 suppressed category_cooldown P-COOL-1",
            "2026-03-14T11:00:30Z push contacts.enrichment \"Cy updated their profile. New info available.\" rin://contacts/c3 [e3]",
            "2026-03-14T11:00:30Z e3 delivered within_budget P-BUD-1",
        ])
    }

    @Test("P-DND-1 deferred to the end of the user's quiet hours; a follow-up scheduled inside them is delivered; security is not held")
    func quietHours() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T21:00:00Z","value":{"type":"user.settings_changed","quiet_hours":{"start":"21:30","end":"06:15"}}}
            {"at":"2026-03-10T21:40:00Z","value":{"type":"intent","id":"f1","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm2","contact_id":"c6","contact_name":"Fay","note":"call","scheduled_local":"2026-03-10T21:40"}}}
            {"at":"2026-03-10T21:45:00Z","value":{"type":"intent","id":"f2","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"rm3","contact_id":"c7","contact_name":"Gus","note":"lunch","scheduled_local":"2026-03-10T20:00"}}}
            {"at":"2026-03-10T22:00:00Z","value":{"type":"intent","id":"a1","notification":"security.new_signin","category":"SECURITY","data":{"detail":"New sign-in from Safari on macOS."}}}
            """, until: "2026-03-11T07:00:00Z")
        #expect(d.summary == [
            "2026-03-10T21:40:30Z push reminder.followup \"Follow up with Fay: call\" rin://reminders/rm2 [f1]",
            "2026-03-10T21:40:30Z f1 delivered scheduled_by_user P-DND-1",
            "2026-03-10T21:45:30Z f2 deferred quiet_hours P-DND-1 until 2026-03-11T06:15:00Z",
            "2026-03-10T22:00:00Z push security.new_signin \"New sign-in from Safari on macOS.\" rin://security/inbox [a1]",
            "2026-03-10T22:00:00Z a1 delivered security P-BUD-1",
            "2026-03-11T06:15:00Z push reminder.followup \"Follow up with Gus: lunch\" rin://reminders/rm3 [f2]",
            "2026-03-11T06:15:00Z f2 delivered quiet_hours_ended P-DND-1",
        ])
    }

    @Test("P-DND-1 P-TIME-1 quiet hours starting in the New York spring-forward gap (02:30) are in force from 03:00")
    func quietHoursStartInDSTGap() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T15:00:00Z","value":{"type":"user.signed_up","time_zone":"America/New_York"}}
            {"at":"2026-03-01T15:00:00Z","value":{"type":"user.settings_changed","quiet_hours":{"start":"02:30","end":"06:00"}}}
            {"at":"2026-03-08T06:59:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":50,"new":53,"label":"Building"}}}
            {"at":"2026-03-08T07:00:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            """, until: "2026-03-08T12:00:00Z")
        #expect(d.summary == [
            "2026-03-08T06:59:30Z push score.updated \"Your Rin Score changed: 50 to 53 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-08T06:59:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-08T07:00:30Z d1 deferred quiet_hours P-DND-1 until 2026-03-08T10:00:00Z",
            "2026-03-08T10:00:00Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-08T10:00:00Z d1 delivered quiet_hours_ended P-DND-1",
        ])
    }

    @Test("P-DND-1 P-TIME-1 22:00 local in Asia/Kathmandu (+05:45) is 16:15Z")
    func quietHoursFortyFiveMinuteOffset() throws {
        let d = try Scenario.run("""
            {"at":"2026-03-01T15:00:00Z","value":{"type":"user.signed_up","time_zone":"Asia/Kathmandu"}}
            {"at":"2026-03-10T16:14:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":50,"new":53,"label":"Building"}}}
            {"at":"2026-03-10T16:15:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            """, until: "2026-03-11T02:00:00Z")
        #expect(d.summary == [
            "2026-03-10T16:14:30Z push score.updated \"Your Rin Score changed: 50 to 53 (+3). Tap to see what improved.\" rin://score [s1]",
            "2026-03-10T16:14:30Z s1 delivered within_budget P-BUD-1",
            "2026-03-10T16:15:30Z d1 deferred quiet_hours P-DND-1 until 2026-03-11T01:15:00Z",
            "2026-03-11T01:15:00Z push contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\" rin://contacts/dedup [d1]",
            "2026-03-11T01:15:00Z d1 delivered quiet_hours_ended P-DND-1",
        ])
    }

    @Test("P-TIME-2 time comes only from the log: the same lines give the same bytes, ids from log coordinates")
    func sameLinesSameBytes() throws {
        let input = Self.signup + """

            {"at":"2026-03-10T23:00:00Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
            {"at":"2026-03-10T23:00:20Z","value":{"type":"intent","id":"e2","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Bob"],"contact_ids":["c2"]}}}
            """
        let expected = [
            #"{"at":"2026-03-10T23:00:30Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.delivery.inbox:0:3:0","intent_id":"e1","notification_id":"rin.delivery.inbox:0:1:0","outcome":"deferred","reason":"quiet_hours","rule":"P-DND-1","type":"decision","until":"2026-03-11T07:00:00Z","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-10T23:00:30Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.delivery.inbox:0:3:1","intent_id":"e2","notification_id":"rin.delivery.inbox:0:1:0","outcome":"deferred","reason":"quiet_hours","rule":"P-DND-1","type":"decision","until":"2026-03-11T07:00:00Z","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-11T07:00:00Z","topic":"rin.notify.deliveries","key":"u1","value":{"body":"Alice and 1 other updated their profiles. New info available.","category":"CONTACTS","channel":"push","deep_link":"rin://home","id":"rin.delivery.inbox:0:3:2","merged_intents":["e1","e2"],"notification":"contacts.enrichment","notification_id":"rin.delivery.inbox:0:1:0","title":"Contacts","type":"delivery","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-11T07:00:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.delivery.inbox:0:3:3","intent_id":"e1","notification_id":"rin.delivery.inbox:0:1:0","outcome":"delivered","reason":"quiet_hours_ended","rule":"P-DND-1","type":"decision","user_id":"u1","v":1}}"#,
            #"{"at":"2026-03-11T07:00:00Z","topic":"rin.notify.decisions","key":"u1","value":{"id":"rin.delivery.inbox:0:3:4","intent_id":"e2","notification_id":"rin.delivery.inbox:0:1:0","outcome":"merged","reason":"coalesced","rule":"P-COAL-1","type":"decision","user_id":"u1","v":1}}"#,
        ]
        // Two independent runs, each checked byte for byte.
        #expect(try Scenario.run(input, until: "2026-03-11T08:00:00Z").jsonl == expected)
        #expect(try Scenario.run(input, until: "2026-03-11T08:00:00Z").jsonl == expected)
    }

    @Test("P-TIME-1 a 25-hour local day (New York, 2026-11-01) is one budget day")
    func twentyFiveHourDay() throws {
        let d = try Scenario.run("""
            {"at":"2026-10-01T15:00:00Z","value":{"type":"user.signed_up","time_zone":"America/New_York"}}
            {"at":"2026-10-25T15:00:00Z","value":{"type":"app.opened","entry_source":"organic"}}
            {"at":"2026-10-25T15:00:00Z","value":{"type":"user.settings_changed","quiet_hours":{"start":"00:00","end":"00:00"}}}
            {"at":"2026-11-01T05:30:00Z","value":{"type":"intent","id":"f1","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"r1","contact_id":"c1","contact_name":"Ann","note":"one","scheduled_local":"2026-11-01T01:30"}}}
            {"at":"2026-11-01T06:30:00Z","value":{"type":"intent","id":"f2","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"r2","contact_id":"c2","contact_name":"Ben","note":"two","scheduled_local":"2026-11-01T01:30"}}}
            {"at":"2026-11-01T17:00:00Z","value":{"type":"intent","id":"f3","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"r3","contact_id":"c3","contact_name":"Cat","note":"three","scheduled_local":"2026-11-01T12:00"}}}
            {"at":"2026-11-02T04:30:00Z","value":{"type":"intent","id":"f4","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"r4","contact_id":"c4","contact_name":"Dov","note":"four","scheduled_local":"2026-11-01T23:30"}}}
            {"at":"2026-11-02T05:30:00Z","value":{"type":"intent","id":"f5","notification":"reminder.followup","category":"REMINDER","data":{"reminder_id":"r5","contact_id":"c5","contact_name":"Eli","note":"five","scheduled_local":"2026-11-02T00:30"}}}
            """, until: "2026-11-02T06:00:00Z")
        #expect(d.decisions == [
            "2026-10-15T04:00:00Z lapsed_summary rin.delivery.inbox:0:1:2 deferred quiet_hours P-DND-1 until 2026-10-15T11:00:00Z",
            "2026-10-15T11:00:00Z lapsed_summary rin.delivery.inbox:0:1:2 skipped nothing_accumulated P-LAP-2",
            "2026-10-31T04:00:00Z value_reminder rin.delivery.inbox:0:3:1 skipped no_new_enrichments P-LAP-4",
            "2026-11-01T05:30:30Z push reminder.followup \"Follow up with Ann: one\" rin://reminders/r1 [f1]",
            "2026-11-01T05:30:30Z f1 delivered within_budget P-BUD-1",
            "2026-11-01T06:30:30Z push reminder.followup \"Follow up with Ben: two\" rin://reminders/r2 [f2]",
            "2026-11-01T06:30:30Z f2 delivered within_budget P-BUD-1",
            "2026-11-01T17:00:30Z push reminder.followup \"Follow up with Cat: three\" rin://reminders/r3 [f3]",
            "2026-11-01T17:00:30Z f3 delivered within_budget P-BUD-1",
            "2026-11-02T04:30:30Z f4 suppressed daily_budget P-BUD-1",
            "2026-11-02T05:30:30Z push reminder.followup \"Follow up with Eli: five\" rin://reminders/r5 [f5]",
            "2026-11-02T05:30:30Z f5 delivered within_budget P-BUD-1",
        ])
    }

    @Test("P-EXP-1 a deferred birthday that reaches its expiry (local midnight) is suppressed")
    func expiry() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T22:00:00Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"},"expires_at":"2026-03-11T00:00:00Z"}}
            """, until: "2026-03-11T08:00:00Z")
        #expect(d.summary == [
            "2026-03-10T22:00:30Z b1 deferred quiet_hours P-DND-1 until 2026-03-11T07:00:00Z",
            "2026-03-11T00:00:00Z b1 suppressed expired P-EXP-1",
            "2026-03-11T00:00:00Z section upcoming reminder.birthday:rm1 \"Bob\'s birthday is today.\"",
        ])
    }

    @Test("P-PREF-1 disabled category and denied permission suppress push; content goes to sections; security goes in-app")
    func preferences() throws {
        let d = try Scenario.run(Self.signup + """

            {"at":"2026-03-10T10:00:00Z","value":{"type":"user.settings_changed","disabled_categories":["SCORE"]}}
            {"at":"2026-03-10T10:01:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":50,"new":53,"label":"Building"}}}
            {"at":"2026-03-10T10:02:00Z","value":{"type":"intent","id":"p1","notification":"premium.who_viewed","category":"PREMIUM","data":{"count":2}}}
            {"at":"2026-03-10T11:00:00Z","value":{"type":"permission.changed","permission":"notifications","status":"denied"}}
            {"at":"2026-03-10T11:01:00Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":2}}}
            {"at":"2026-03-10T11:02:00Z","value":{"type":"intent","id":"a1","notification":"security.access_request","category":"SECURITY","data":{"request_id":"q1","requester_name":"Carol","field":"email"}}}
            """, until: "2026-03-10T12:00:00Z")
        #expect(d.summary == [
            "2026-03-10T10:01:30Z s1 suppressed category_disabled P-PREF-1",
            "2026-03-10T10:01:30Z section score_changed score.updated \"Your Rin Score changed: 50 to 53 (+3). Tap to see what improved.\"",
            "2026-03-10T10:02:30Z p1 suppressed not_premium P-PREF-1",
            "2026-03-10T10:02:30Z section network_health premium.who_viewed \"2 people viewed your profile this week.\"",
            "2026-03-10T11:00:00Z event retention.churn_signal_detected signal_type=notification_revoked user_age_days=9",
            "2026-03-10T11:01:30Z d1 suppressed permission_denied P-PREF-1",
            "2026-03-10T11:01:30Z section needs_attention contacts.dedup_ready \"2 possible duplicates found. Review and clean your contacts.\"",
            "2026-03-10T11:02:00Z section needs_attention security.access_request:q1 \"Carol asked to see your email.\"",
            "2026-03-10T11:02:00Z a1 delivered in_app_permission_denied P-PREF-1",
        ])
    }
}
