import FleetModel
import Testing
import UpstreamProcessors

private let topic = Topics.syncResults

private func sync(
    _ syncId: String, at time: String, added: Int = 0, updated: Int = 0, autoMerged: Int = 0, newDedup: Int = 0,
    unreviewed: Int = 0, oldest: String? = nil, enrichment: [(String, String)] = [], conflicts: [(String, String, String)] = []
) -> FleetRecord {
    .contactsSyncCompleted(ContactsSyncCompleted(
        id: "rec-\(syncId)", userId: "u1", syncId: syncId, completedAt: at(time), added: added, updated: updated,
        autoMerged: autoMerged, newDedupSuggestions: newDedup, unreviewedDedupSuggestions: unreviewed,
        oldestUnreviewedDedupAt: oldest.map(at),
        enrichment: enrichment.map { .init(contactId: $0.0, name: $0.1) },
        conflicts: conflicts.map { .init(contactId: $0.0, name: $0.1, field: $0.2) }))
}

@Suite("Sync worker")
struct SyncProcessorTests {
    @Test("P-SYN-1 new dedup suggestions raise contacts.dedup_ready with the count")
    func dedupReady() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        let now = at("2026-04-02T08:00:00Z")
        let out = try h.process(sync("s1", at: "2026-04-02T07:59:00Z", newDedup: 3, unreviewed: 3, oldest: "2026-04-02T07:59:00Z"), at: now)
        #expect(out == [Expect.intent(
            "rin.contacts.sync-results:0:0:0", "contacts.dedup_ready", "CONTACTS", ["count": 3],
            source: source(topic, 0), at: now)])
    }

    @Test("P-SYN-2 one contacts.enrichment intent per sync with every name in order")
    func enrichment() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        let now = at("2026-04-02T08:00:00Z")
        let out = try h.process(
            sync("s1", at: "2026-04-02T08:00:00Z", enrichment: [("c7", "Priya"), ("c2", "Ana"), ("c9", "Tom"), ("c4", "Lee"), ("c5", "Bo")]),
            at: now)
        #expect(out == [Expect.intent(
            "rin.contacts.sync-results:0:0:0", "contacts.enrichment", "CONTACTS",
            ["names": ["Priya", "Ana", "Tom", "Lee", "Bo"], "contact_ids": ["c7", "c2", "c9", "c4", "c5"]],
            source: source(topic, 0), at: now)])
    }

    @Test("P-SYN-3 conflicts raise contacts.sync_conflict counting distinct contacts")
    func conflicts() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        let now = at("2026-04-02T08:00:00Z")
        let out = try h.process(
            sync("s1", at: "2026-04-02T08:00:00Z", conflicts: [("c1", "Ana", "phone"), ("c3", "Tom", "email"), ("c1", "Ana", "email")]),
            at: now)
        #expect(out == [Expect.intent(
            "rin.contacts.sync-results:0:0:0", "contacts.sync_conflict", "CONTACTS", ["count": 2, "contact_ids": ["c1", "c3"]],
            source: source(topic, 0), at: now)])
    }

    @Test("P-SYN-4 added → Recently Added item; updated → contact_sync_completed; auto_merged → dedup_auto_merged")
    func addedUpdatedMerged() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        let now = at("2026-04-02T08:00:01Z")
        let out = try h.process(sync("s1", at: "2026-04-02T08:00:00Z", added: 4, updated: 2, autoMerged: 1), at: now)
        #expect(out == [
            Expect.item(
                "rin.contacts.sync-results:0:0:0", section: "recently_added", itemId: "recently_added",
                ["count": 4, "sync_id": "s1", "completed_at": "2026-04-02T08:00:00Z"], at: now),
            Expect.valueEvent("rin.contacts.sync-results:0:0:1", "contact_sync_completed", at: now),
            Expect.valueEvent("rin.contacts.sync-results:0:0:2", "dedup_auto_merged", at: now),
        ])
        // Nothing happened: nothing appears (§5.4).
        #expect(try h.process(sync("s2", at: "2026-04-03T08:00:00Z"), at: at("2026-04-03T08:00:00Z")).isEmpty)
    }

    @Test("P-SYN-5 10+ unreviewed suggestions, oldest 14+ days → one reminder and dedup_accumulating, not again until below 10")
    func accumulatingDedup() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        // 12 unreviewed, oldest 13 days 23 hours old: not yet.
        let young = try h.process(
            sync("s1", at: "2026-04-15T07:00:00Z", unreviewed: 12, oldest: "2026-04-01T08:00:00Z"), at: at("2026-04-15T07:00:00Z"))
        #expect(young.isEmpty)
        // 14 days: the reminder, counting every unreviewed suggestion (2 new ones included).
        let now = at("2026-04-15T08:00:00Z")
        let due = try h.process(
            sync("s2", at: "2026-04-15T08:00:00Z", newDedup: 2, unreviewed: 14, oldest: "2026-04-01T08:00:00Z"), at: now)
        #expect(due == [
            Expect.intent(
                "rin.contacts.sync-results:0:1:0", "contacts.dedup_ready", "CONTACTS", ["count": 14],
                source: source(topic, 1), at: now),
            Expect.churnSignal("rin.contacts.sync-results:0:1:1", "dedup_accumulating", at: now),
        ])
        // Still accumulating: no second reminder (new suggestions still notify per P-SYN-1).
        let still = try h.process(
            sync("s3", at: "2026-04-16T08:00:00Z", newDedup: 1, unreviewed: 15, oldest: "2026-04-01T08:00:00Z"), at: at("2026-04-16T08:00:00Z"))
        #expect(still.compactMap(\.intent).map(\.data) == [["count": 1]])
        #expect(still.compactMap(\.retentionEvent).isEmpty)
        // Drops below 10, then accumulates again: a new reminder.
        try h.process(sync("s4", at: "2026-04-17T08:00:00Z", unreviewed: 9, oldest: "2026-04-01T08:00:00Z"), at: at("2026-04-17T08:00:00Z"))
        let again = try h.process(
            sync("s5", at: "2026-04-18T08:00:00Z", unreviewed: 10, oldest: "2026-04-01T08:00:00Z"), at: at("2026-04-18T08:00:00Z"))
        #expect(again.map(\.record.type) == ["intent", "retention.event"])
        #expect(again.first?.intent?.data == ["count": 10])
    }

    @Test("P-SYN-5 without the oldest suggestion's time the age is unknown: no reminder")
    func accumulatingWithoutAge() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        #expect(try h.process(sync("s1", at: "2026-04-15T08:00:00Z", unreviewed: 30), at: at("2026-04-15T08:00:00Z")).isEmpty)
    }

    @Test("A re-delivered sync result (same sync_id) is ignored")
    func redelivered() throws {
        var h = Harness(SyncProcessor(), topic: topic)
        try h.process(sync("s1", at: "2026-04-02T08:00:00Z", newDedup: 3), at: at("2026-04-02T08:00:00Z"))
        #expect(try h.process(sync("s1", at: "2026-04-02T08:00:00Z", newDedup: 3), at: at("2026-04-02T08:01:00Z")).isEmpty)
    }

    @Test("Negative counts are rejected")
    func invalid() {
        var h = Harness(SyncProcessor(), topic: topic)
        #expect(throws: RecordError("field 'added' is -1, must be 0 or more")) {
            try h.process(sync("s1", at: "2026-04-02T08:00:00Z", added: -1), at: at("2026-04-02T08:00:00Z"))
        }
    }
}
