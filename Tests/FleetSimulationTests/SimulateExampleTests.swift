import FleetModel
import FleetSimulation
import Foundation
import Testing

/// The README example of `fleetctl simulate`: a hand-written file of external inputs (an
/// activity sign-up, a score batch, a contact sync, a birthday reminder, an access request, an
/// open) run through the command's core, `SimulationRun.run`, on the whole fleet, with each
/// shipped profile. The output is compared line for line, ids included.
@Suite struct SimulateExampleTests {
    /// `samples/simulate-example.jsonl` at the package root.
    static let examplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("samples/simulate-example.jsonl").path

    /// `--until` of the README command.
    static let until = Timestamp(rfc3339: "2026-03-03T12:00:00Z")

    /// Reads the example file and checks it is the one the expectations below were written for.
    static func exampleInput() throws -> String {
        let text = try String(contentsOfFile: examplePath, encoding: .utf8)
        let topics = text.split(separator: "\n").compactMap { line in
            (try? SimulationInput.parse(line, line: 0))??.topic
        }
        #expect(topics == [
            "rin.app.activity", "rin.score.batches", "rin.contacts.sync-results", "rin.reminders",
            "rin.security.access-requests", "rin.app.activity",
        ], "samples/simulate-example.jsonl changed; update the README and these expectations together")
        return text
    }

    static func simulate(profile: String) throws -> [String] {
        let output = try SimulationRun.run(
            try exampleInput(), simulator: try Simulator.fleet(profile: .shipped(profile)), until: until)
        return output.split(separator: "\n").map(String.init)
    }

    /// rin: day one allows one score and one dedup notification (P-BUD-6); the sync's dedup and
    /// enrichment share a coalescing window, dedup (rank 3) wins and enrichment is merged into
    /// its section (P-COAL-1, P-BUD-2); the access request is pushed at 23:30 Berlin, inside
    /// quiet hours (P-BUD-1, P-ACC-1); the birthday fires at 09:00 Berlin (P-REM-1, P-TIME-1).
    @Test("P-PROF-1 P-BUD-6 P-COAL-1 fleetctl simulate's core on samples/simulate-example.jsonl with --profile rin")
    func rinExample() throws {
        #expect(try Self.simulate(profile: "rin") == [
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"SCORE","data":{"label":"Good","new":64},"id":"rin.score.batches:0:0:0","notification":"score.updated","source":{"offset":0,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.score.batches:0:0:1","properties":{"event_type":"score_updated"},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.delivery.inbox:0:2:0","properties":{"event_type":"score_updated","user_was_active":false},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:00:30Z","topic":"rin.notify.deliveries","key":"maya","value":{"body":"Your Rin Score is ready: 64.","category":"SCORE","channel":"push","deep_link":"rin://score","id":"rin.delivery.inbox:0:3:0","merged_intents":["rin.score.batches:0:0:0"],"notification":"score.updated","notification_id":"rin.delivery.inbox:0:1:0","title":"Rin Score","type":"delivery","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:00:30Z","topic":"rin.notify.decisions","key":"maya","value":{"id":"rin.delivery.inbox:0:3:1","intent_id":"rin.score.batches:0:0:0","notification_id":"rin.delivery.inbox:0:1:0","outcome":"delivered","reason":"within_budget","rule":"P-BUD-1","type":"decision","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"CONTACTS","data":{"count":3},"id":"rin.contacts.sync-results:0:0:0","notification":"contacts.dedup_ready","source":{"offset":0,"partition":0,"topic":"rin.contacts.sync-results"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"CONTACTS","data":{"contact_ids":["c-11","c-12"],"names":["Priya","Tom"]},"id":"rin.contacts.sync-results:0:0:1","notification":"contacts.enrichment","source":{"offset":0,"partition":0,"topic":"rin.contacts.sync-results"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"id":"rin.contacts.sync-results:0:0:2","item":{"completed_at":"2026-03-02T09:20:00Z","count":4,"sync_id":"s-1"},"item_id":"recently_added","section":"recently_added","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.contacts.sync-results:0:0:3","properties":{"event_type":"contact_sync_completed"},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.contacts.sync-results:0:0:4","properties":{"event_type":"dedup_auto_merged"},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.home.sections","key":"maya","value":{"id":"rin.delivery.inbox:0:5:0","item":{"completed_at":"2026-03-02T09:20:00Z","count":4,"sync_id":"s-1"},"item_id":"recently_added","section":"recently_added","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.delivery.inbox:0:6:0","properties":{"event_type":"contact_sync_completed","user_was_active":false},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.delivery.inbox:0:7:0","properties":{"event_type":"dedup_auto_merged","user_was_active":false},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:30Z","topic":"rin.notify.deliveries","key":"maya","value":{"body":"3 possible duplicates found. Review and clean your contacts.","category":"CONTACTS","channel":"push","deep_link":"rin://contacts/dedup","id":"rin.delivery.inbox:0:8:0","merged_intents":["rin.contacts.sync-results:0:0:0","rin.contacts.sync-results:0:0:1"],"notification":"contacts.dedup_ready","notification_id":"rin.delivery.inbox:0:3:2","title":"Contacts","type":"delivery","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:30Z","topic":"rin.notify.decisions","key":"maya","value":{"id":"rin.delivery.inbox:0:8:1","intent_id":"rin.contacts.sync-results:0:0:0","notification_id":"rin.delivery.inbox:0:3:2","outcome":"delivered","reason":"within_budget","rule":"P-BUD-1","type":"decision","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:30Z","topic":"rin.notify.decisions","key":"maya","value":{"id":"rin.delivery.inbox:0:8:2","intent_id":"rin.contacts.sync-results:0:0:1","notification_id":"rin.delivery.inbox:0:3:2","outcome":"merged","reason":"coalesced","rule":"P-COAL-1","type":"decision","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:30Z","topic":"rin.home.sections","key":"maya","value":{"id":"rin.delivery.inbox:0:8:3","item":{"body":"Priya and 1 other updated their profiles. New info available.","deep_link":"rin://home","intent_ids":["rin.contacts.sync-results:0:0:1"],"notification":"contacts.enrichment","reason":"merged","title":"Contacts"},"item_id":"contacts.enrichment","section":"enrichment_updates","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T10:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"expires_at":"2026-03-03T23:00:00Z","id":"rin.reminder.inbox:0:0:0","item":{"contact_id":"c-13","contact_name":"Ines","date":"2026-03-03","kind":"birthday","reminder_id":"bday-ines"},"item_id":"reminder:bday-ines","section":"upcoming","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T10:00:00Z","topic":"rin.home.sections","key":"maya","value":{"expires_at":"2026-03-03T23:00:00Z","id":"rin.delivery.inbox:0:8:4","item":{"contact_id":"c-13","contact_name":"Ines","date":"2026-03-03","kind":"birthday","reminder_id":"bday-ines"},"item_id":"reminder:bday-ines","section":"upcoming","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"SECURITY","data":{"field":"phone number","request_id":"req-7","requester_name":"Dana"},"id":"rin.security.access-requests:0:0:0","notification":"security.access_request","source":{"offset":0,"partition":0,"topic":"rin.security.access-requests"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"id":"rin.security.access-requests:0:0:1","item":{"field":"phone number","kind":"access_request","request_id":"req-7","requester_name":"Dana"},"item_id":"access_request:req-7","section":"needs_attention","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.notify.deliveries","key":"maya","value":{"body":"Dana asked to see your phone number.","category":"SECURITY","channel":"push","deep_link":"rin://security/inbox","id":"rin.delivery.inbox:0:9:1","merged_intents":["rin.security.access-requests:0:0:0"],"notification":"security.access_request","notification_id":"rin.delivery.inbox:0:9:0","title":"Access request","type":"delivery","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.notify.decisions","key":"maya","value":{"id":"rin.delivery.inbox:0:9:2","intent_id":"rin.security.access-requests:0:0:0","notification_id":"rin.delivery.inbox:0:9:0","outcome":"delivered","reason":"security","rule":"P-BUD-1","type":"decision","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.home.sections","key":"maya","value":{"id":"rin.delivery.inbox:0:10:0","item":{"field":"phone number","kind":"access_request","request_id":"req-7","requester_name":"Dana"},"item_id":"access_request:req-7","section":"needs_attention","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-03T08:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"REMINDER","data":{"contact_id":"c-13","contact_name":"Ines","reminder_id":"bday-ines"},"expires_at":"2026-03-03T23:00:00Z","id":"rin.reminder.inbox:0:1:0","notification":"reminder.birthday","source":{"offset":1,"partition":0,"topic":"rin.reminder.inbox"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-03T08:00:30Z","topic":"rin.notify.deliveries","key":"maya","value":{"body":"Ines's birthday is today.","category":"REMINDER","channel":"push","deep_link":"rin://reminders/bday-ines","id":"rin.delivery.inbox:0:12:0","merged_intents":["rin.reminder.inbox:0:1:0"],"notification":"reminder.birthday","notification_id":"rin.delivery.inbox:0:11:0","title":"Birthday","type":"delivery","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-03T08:00:30Z","topic":"rin.notify.decisions","key":"maya","value":{"id":"rin.delivery.inbox:0:12:1","intent_id":"rin.reminder.inbox:0:1:0","notification_id":"rin.delivery.inbox:0:11:0","outcome":"delivered","reason":"within_budget","rule":"P-BUD-1","type":"decision","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-03T09:30:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.app_opened","id":"rin.delivery.inbox:0:12:2","properties":{"days_since_last_open":1,"entry_source":"notification","is_lapsed":false,"streak_current":1,"streak_longest":1},"type":"retention.event","user_id":"maya","v":1}}"#,
        ])
    }

    /// fitcircle: the same upstream workers run (their settings come from the same file), but
    /// the rin notification types they request are not in the fitcircle catalog, so the
    /// delivery worker refuses each one to the dead-letter topic (P-CAT-1) and goes on;
    /// section items, value events and the open are still handled.
    @Test("P-PROF-1 P-CAT-1 fleetctl simulate's core on samples/simulate-example.jsonl with --profile fitcircle")
    func fitcircleExample() throws {
        #expect(try Self.simulate(profile: "fitcircle") == [
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"SCORE","data":{"label":"Good","new":64},"id":"rin.score.batches:0:0:0","notification":"score.updated","source":{"offset":0,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.score.batches:0:0:1","properties":{"event_type":"score_updated"},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.delivery.inbox.dlq","key":"maya","value":{"error":"unknown notification type 'score.updated' (P-CAT-1: not in the 'fitcircle' catalog)","record":{"category":"SCORE","data":{"label":"Good","new":64},"id":"rin.score.batches:0:0:0","notification":"score.updated","source":{"offset":0,"partition":0,"topic":"rin.score.batches"},"type":"intent","user_id":"maya","v":1},"source_offset":1,"source_partition":0,"source_topic":"rin.delivery.inbox"}}"#,
            #"{"at":"2026-03-02T09:00:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.delivery.inbox:0:2:0","properties":{"event_type":"score_updated","user_was_active":false},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"CONTACTS","data":{"count":3},"id":"rin.contacts.sync-results:0:0:0","notification":"contacts.dedup_ready","source":{"offset":0,"partition":0,"topic":"rin.contacts.sync-results"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"CONTACTS","data":{"contact_ids":["c-11","c-12"],"names":["Priya","Tom"]},"id":"rin.contacts.sync-results:0:0:1","notification":"contacts.enrichment","source":{"offset":0,"partition":0,"topic":"rin.contacts.sync-results"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"id":"rin.contacts.sync-results:0:0:2","item":{"completed_at":"2026-03-02T09:20:00Z","count":4,"sync_id":"s-1"},"item_id":"recently_added","section":"recently_added","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.contacts.sync-results:0:0:3","properties":{"event_type":"contact_sync_completed"},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.contacts.sync-results:0:0:4","properties":{"event_type":"dedup_auto_merged"},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox.dlq","key":"maya","value":{"error":"unknown notification type 'contacts.dedup_ready' (P-CAT-1: not in the 'fitcircle' catalog)","record":{"category":"CONTACTS","data":{"count":3},"id":"rin.contacts.sync-results:0:0:0","notification":"contacts.dedup_ready","source":{"offset":0,"partition":0,"topic":"rin.contacts.sync-results"},"type":"intent","user_id":"maya","v":1},"source_offset":3,"source_partition":0,"source_topic":"rin.delivery.inbox"}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.delivery.inbox.dlq","key":"maya","value":{"error":"unknown notification type 'contacts.enrichment' (P-CAT-1: not in the 'fitcircle' catalog)","record":{"category":"CONTACTS","data":{"contact_ids":["c-11","c-12"],"names":["Priya","Tom"]},"id":"rin.contacts.sync-results:0:0:1","notification":"contacts.enrichment","source":{"offset":0,"partition":0,"topic":"rin.contacts.sync-results"},"type":"intent","user_id":"maya","v":1},"source_offset":4,"source_partition":0,"source_topic":"rin.delivery.inbox"}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.home.sections","key":"maya","value":{"id":"rin.delivery.inbox:0:5:0","item":{"completed_at":"2026-03-02T09:20:00Z","count":4,"sync_id":"s-1"},"item_id":"recently_added","section":"recently_added","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.delivery.inbox:0:6:0","properties":{"event_type":"contact_sync_completed","user_was_active":false},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T09:20:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.value_event_delivered","id":"rin.delivery.inbox:0:7:0","properties":{"event_type":"dedup_auto_merged","user_was_active":false},"type":"retention.event","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T10:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"expires_at":"2026-03-03T23:00:00Z","id":"rin.reminder.inbox:0:0:0","item":{"contact_id":"c-13","contact_name":"Ines","date":"2026-03-03","kind":"birthday","reminder_id":"bday-ines"},"item_id":"reminder:bday-ines","section":"upcoming","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T10:00:00Z","topic":"rin.home.sections","key":"maya","value":{"expires_at":"2026-03-03T23:00:00Z","id":"rin.delivery.inbox:0:8:0","item":{"contact_id":"c-13","contact_name":"Ines","date":"2026-03-03","kind":"birthday","reminder_id":"bday-ines"},"item_id":"reminder:bday-ines","section":"upcoming","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"SECURITY","data":{"field":"phone number","request_id":"req-7","requester_name":"Dana"},"id":"rin.security.access-requests:0:0:0","notification":"security.access_request","source":{"offset":0,"partition":0,"topic":"rin.security.access-requests"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"id":"rin.security.access-requests:0:0:1","item":{"field":"phone number","kind":"access_request","request_id":"req-7","requester_name":"Dana"},"item_id":"access_request:req-7","section":"needs_attention","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.delivery.inbox.dlq","key":"maya","value":{"error":"unknown notification type 'security.access_request' (P-CAT-1: not in the 'fitcircle' catalog)","record":{"category":"SECURITY","data":{"field":"phone number","request_id":"req-7","requester_name":"Dana"},"id":"rin.security.access-requests:0:0:0","notification":"security.access_request","source":{"offset":0,"partition":0,"topic":"rin.security.access-requests"},"type":"intent","user_id":"maya","v":1},"source_offset":9,"source_partition":0,"source_topic":"rin.delivery.inbox"}}"#,
            #"{"at":"2026-03-02T22:30:00Z","topic":"rin.home.sections","key":"maya","value":{"id":"rin.delivery.inbox:0:10:0","item":{"field":"phone number","kind":"access_request","request_id":"req-7","requester_name":"Dana"},"item_id":"access_request:req-7","section":"needs_attention","type":"section.item","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-03T08:00:00Z","topic":"rin.delivery.inbox","key":"maya","value":{"category":"REMINDER","data":{"contact_id":"c-13","contact_name":"Ines","reminder_id":"bday-ines"},"expires_at":"2026-03-03T23:00:00Z","id":"rin.reminder.inbox:0:1:0","notification":"reminder.birthday","source":{"offset":1,"partition":0,"topic":"rin.reminder.inbox"},"type":"intent","user_id":"maya","v":1}}"#,
            #"{"at":"2026-03-03T08:00:00Z","topic":"rin.delivery.inbox.dlq","key":"maya","value":{"error":"unknown notification type 'reminder.birthday' (P-CAT-1: not in the 'fitcircle' catalog)","record":{"category":"REMINDER","data":{"contact_id":"c-13","contact_name":"Ines","reminder_id":"bday-ines"},"expires_at":"2026-03-03T23:00:00Z","id":"rin.reminder.inbox:0:1:0","notification":"reminder.birthday","source":{"offset":1,"partition":0,"topic":"rin.reminder.inbox"},"type":"intent","user_id":"maya","v":1},"source_offset":11,"source_partition":0,"source_topic":"rin.delivery.inbox"}}"#,
            #"{"at":"2026-03-03T09:30:00Z","topic":"rin.retention.events","key":"maya","value":{"event":"retention.app_opened","id":"rin.delivery.inbox:0:12:0","properties":{"days_since_last_open":1,"entry_source":"notification","is_lapsed":false,"streak_current":1,"streak_longest":1},"type":"retention.event","user_id":"maya","v":1}}"#,
        ])
    }
}
