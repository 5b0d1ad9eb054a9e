import FleetModel
import Testing
import UpstreamProcessors

private let topic = Topics.reminderInbox

func zone(_ id: String) -> Zone {
    guard let z = Zone(identifier: id) else { preconditionFailure("unknown zone \(id)") }
    return z
}

func birthday(_ reminderId: String, _ monthDay: String, zone id: String, name: String = "Alice", contact: String = "c1") -> FleetRecord {
    let parts = monthDay.split(separator: "-").compactMap { Int($0) }
    return .reminderUpserted(ReminderUpserted(
        id: "up-\(reminderId)", userId: "u1", reminderId: reminderId, kind: .birthday, contactId: contact, contactName: name,
        timeZone: zone(id), birthday: MonthDay(month: parts[0], day: parts[1])))
}

func followup(
    _ reminderId: String, _ local: String, zone id: String, recurrence: Recurrence = .none, note: String? = "coffee",
    name: String = "Bob", contact: String = "c2"
) -> FleetRecord {
    .reminderUpserted(ReminderUpserted(
        id: "up-\(reminderId)", userId: "u1", reminderId: reminderId, kind: .followup, contactId: contact, contactName: name,
        timeZone: zone(id), fireAtLocal: LocalDateTime(Substring(local)), recurrence: recurrence, note: note))
}

func cancel(_ reminderId: String) -> FleetRecord {
    .reminderCancelled(ReminderCancelled(id: "cancel-\(reminderId)", userId: "u1", reminderId: reminderId))
}

private func reminderHarness(_ settings: ReminderSettings = .rin) -> Harness<ReminderProcessor> {
    Harness(ReminderProcessor(settings: settings), topic: topic)
}

/// The fired intents as `notification @ time scheduled_local`.
private func fired(_ outputs: [OutputRecord]) -> [String] {
    outputs.compactMap { output in
        output.intent.map { "\($0.notification) @ \(output.timestamp)" + ($0.data["scheduled_local"]?.stringValue.map { " " + $0 } ?? "") }
    }
}

@Suite("Reminder worker")
struct ReminderProcessorTests {
    @Test("P-REM-1 P-REM-3 a birthday: Upcoming item 7 local days ahead, fires at 09:00 local, expires at local midnight, every year")
    func birthdayYearly() throws {
        var h = reminderHarness()
        let upsertOut = try h.process(birthday("r1", "03-14", zone: "Europe/Berlin"), at: at("2026-03-01T12:00:00Z"))
        #expect(upsertOut.isEmpty)
        #expect(h.processor.nextWakeUp(h.state) == at("2026-03-06T23:00:00Z"))
        let timers = h.advance(to: at("2027-03-15T00:00:00Z"))
        #expect(timers == [
            Expect.item(
                "rin.reminder.inbox:0:1:0", section: "upcoming", itemId: "reminder:r1",
                ["kind": "birthday", "reminder_id": "r1", "contact_id": "c1", "contact_name": "Alice", "date": "2026-03-14"],
                expiresAt: at("2026-03-14T23:00:00Z"), at: at("2026-03-06T23:00:00Z")),
            Expect.intent(
                "rin.reminder.inbox:0:2:0", "reminder.birthday", "REMINDER",
                ["reminder_id": "r1", "contact_id": "c1", "contact_name": "Alice"],
                expiresAt: at("2026-03-14T23:00:00Z"), source: source(topic, 2), at: at("2026-03-14T08:00:00Z")),
            Expect.item(
                "rin.reminder.inbox:0:3:0", section: "upcoming", itemId: "reminder:r1",
                ["kind": "birthday", "reminder_id": "r1", "contact_id": "c1", "contact_name": "Alice", "date": "2027-03-14"],
                expiresAt: at("2027-03-14T23:00:00Z"), at: at("2027-03-06T23:00:00Z")),
            Expect.intent(
                "rin.reminder.inbox:0:4:0", "reminder.birthday", "REMINDER",
                ["reminder_id": "r1", "contact_id": "c1", "contact_name": "Alice"],
                expiresAt: at("2027-03-14T23:00:00Z"), source: source(topic, 4), at: at("2027-03-14T08:00:00Z")),
        ])
        #expect(h.processor.nextWakeUp(h.state) == at("2028-03-06T23:00:00Z"))
    }

    @Test("P-REM-1 29 February fires on 28 February in other years; summer birthdays follow DST")
    func leapDayBirthday() throws {
        var h = reminderHarness()
        try h.process(birthday("r1", "02-29", zone: "America/New_York"), at: at("2027-01-01T00:00:00Z"))
        try h.process(birthday("r2", "07-04", zone: "America/New_York", name: "Carol", contact: "c3"), at: at("2027-01-01T00:00:00Z"))
        h.advance(to: at("2029-12-31T00:00:00Z"))
        #expect(fired(h.outputs) == [
            "reminder.birthday @ 2027-02-28T14:00:00Z",  // 09:00 EST
            "reminder.birthday @ 2027-07-04T13:00:00Z",  // 09:00 EDT
            "reminder.birthday @ 2028-02-29T14:00:00Z",
            "reminder.birthday @ 2028-07-04T13:00:00Z",
            "reminder.birthday @ 2029-02-28T14:00:00Z",
            "reminder.birthday @ 2029-07-04T13:00:00Z",
        ])
    }

    @Test("P-REM-1 a birthday scheduled during its day still fires that day; after the day it waits a year")
    func birthdayScheduledOnTheDay() throws {
        var h = reminderHarness()
        let now = at("2026-06-10T13:00:00Z")  // 15:00 in Berlin
        let out = try h.process(birthday("r1", "06-10", zone: "Europe/Berlin"), at: now)
        #expect(out.map(\.record.type) == ["section.item", "intent"])
        #expect(out[1] == Expect.intent(
            "rin.reminder.inbox:0:0:1", "reminder.birthday", "REMINDER",
            ["reminder_id": "r1", "contact_id": "c1", "contact_name": "Alice"],
            expiresAt: at("2026-06-10T22:00:00Z"), source: source(topic, 0), at: now))
        var late = reminderHarness()
        #expect(try late.process(birthday("r1", "06-10", zone: "Europe/Berlin"), at: at("2026-06-10T22:00:00Z")).isEmpty)
        #expect(late.processor.nextWakeUp(late.state) == at("2027-06-02T22:00:00Z"))
    }

    @Test("P-REM-2 a one-off follow-up fires once at its local date-time with the note and the scheduled local time")
    func followupOnce() throws {
        var h = reminderHarness()
        try h.process(followup("f1", "2026-04-20T18:15", zone: "Asia/Kolkata"), at: at("2026-04-01T00:00:00Z"))
        let out = h.advance(to: at("2027-01-01T00:00:00Z"))
        #expect(out == [Expect.intent(
            "rin.reminder.inbox:0:1:0", "reminder.followup", "REMINDER",
            ["reminder_id": "f1", "contact_id": "c2", "contact_name": "Bob", "note": "coffee", "scheduled_local": "2026-04-20T18:15"],
            source: source(topic, 1), at: at("2026-04-20T12:45:00Z"))])
        #expect(h.processor.nextWakeUp(h.state) == nil)
    }

    @Test("P-REM-2 weekly follow-ups keep their local time across a DST change")
    func followupWeeklyAcrossDST() throws {
        var h = reminderHarness()
        try h.process(followup("f1", "2026-03-01T09:30", zone: "America/New_York", recurrence: .weekly), at: at("2026-02-20T00:00:00Z"))
        h.advance(to: at("2026-03-20T00:00:00Z"))
        #expect(fired(h.outputs) == [
            "reminder.followup @ 2026-03-01T14:30:00Z 2026-03-01T09:30",
            "reminder.followup @ 2026-03-08T13:30:00Z 2026-03-08T09:30",
            "reminder.followup @ 2026-03-15T13:30:00Z 2026-03-15T09:30",
        ])
    }

    @Test("P-REM-2 monthly follow-ups on the 31st fall back to the month's last day")
    func followupMonthly31st() throws {
        var h = reminderHarness()
        try h.process(followup("f1", "2026-01-31T18:00", zone: "UTC", recurrence: .monthly), at: at("2026-01-01T00:00:00Z"))
        h.advance(to: at("2026-05-01T00:00:00Z"))
        #expect(fired(h.outputs) == [
            "reminder.followup @ 2026-01-31T18:00:00Z 2026-01-31T18:00",
            "reminder.followup @ 2026-02-28T18:00:00Z 2026-02-28T18:00",
            "reminder.followup @ 2026-03-31T18:00:00Z 2026-03-31T18:00",
            "reminder.followup @ 2026-04-30T18:00:00Z 2026-04-30T18:00",
        ])
    }

    @Test("P-REM-2 a time in the DST gap fires at the first valid minute after it")
    func followupInGap() throws {
        var h = reminderHarness()
        try h.process(followup("f1", "2026-03-08T02:30", zone: "America/New_York"), at: at("2026-03-01T00:00:00Z"))
        h.advance(to: at("2026-03-09T00:00:00Z"))
        // 02:30 does not exist on 8 March 2026 in New York; 03:00 EDT is 07:00Z.
        #expect(fired(h.outputs) == ["reminder.followup @ 2026-03-08T07:00:00Z 2026-03-08T02:30"])
    }

    @Test("P-REM-2 a time that occurs twice (DST ends) fires once, at the first")
    func followupInOverlap() throws {
        var h = reminderHarness()
        try h.process(followup("f1", "2026-11-01T01:30", zone: "America/New_York", recurrence: .weekly), at: at("2026-10-25T00:00:00Z"))
        h.advance(to: at("2026-11-09T00:00:00Z"))
        #expect(fired(h.outputs) == [
            "reminder.followup @ 2026-11-01T05:30:00Z 2026-11-01T01:30",  // 01:30 EDT, not again at 01:30 EST
            "reminder.followup @ 2026-11-08T06:30:00Z 2026-11-08T01:30",
        ])
    }

    @Test("P-REM-2 a follow-up scheduled just after its time fires at once; one scheduled beyond the grace is skipped")
    func followupLate() throws {
        var h = reminderHarness()
        let now = at("2026-04-20T10:10:00Z")
        let out = try h.process(followup("f1", "2026-04-20T10:00", zone: "UTC"), at: now)
        #expect(fired(out) == ["reminder.followup @ 2026-04-20T10:10:00Z 2026-04-20T10:00"])
        var late = reminderHarness()
        #expect(try late.process(followup("f1", "2026-04-20T08:00", zone: "UTC"), at: now).isEmpty)
        #expect(late.processor.nextWakeUp(late.state) == nil)
        // A weekly one skips to its next occurrence.
        var weekly = reminderHarness()
        try weekly.process(followup("f1", "2026-04-20T08:00", zone: "UTC", recurrence: .weekly), at: now)
        #expect(weekly.processor.nextWakeUp(weekly.state) == at("2026-04-27T08:00:00Z"))
    }

    @Test("P-REM-3 a birthday upserted within 7 days gets its Upcoming item at once; follow-ups get none")
    func upcomingOnUpsert() throws {
        var h = reminderHarness()
        let now = at("2026-05-10T12:00:00Z")
        let out = try h.process(birthday("r1", "05-15", zone: "UTC", name: "Dee"), at: now)
        #expect(out == [Expect.item(
            "rin.reminder.inbox:0:0:0", section: "upcoming", itemId: "reminder:r1",
            ["kind": "birthday", "reminder_id": "r1", "contact_id": "c1", "contact_name": "Dee", "date": "2026-05-15"],
            expiresAt: at("2026-05-16T00:00:00Z"), at: now)])
        #expect(try h.process(followup("f1", "2026-05-11T08:00", zone: "UTC"), at: now).isEmpty)
        #expect(try h.process(birthday("r2", "05-18", zone: "UTC"), at: now).isEmpty)  // 8 days ahead
    }

    @Test("P-REM-4 upsert replaces by id: one reminder, the new schedule, the Upcoming item refreshed")
    func upsertReplaces() throws {
        var h = reminderHarness()
        try h.process(birthday("r1", "05-15", zone: "UTC", name: "Dee"), at: at("2026-05-10T00:00:00Z"))
        let renamed = try h.process(birthday("r1", "05-15", zone: "UTC", name: "Deirdre"), at: at("2026-05-11T00:00:00Z"))
        #expect(renamed.compactMap(\.sectionItem).map { $0.item["contact_name"] } == ["Deirdre"])
        let moved = try h.process(birthday("r1", "09-01", zone: "UTC", name: "Deirdre"), at: at("2026-05-12T00:00:00Z"))
        #expect(moved == [Expect.item(
            "rin.reminder.inbox:0:2:0", section: "upcoming", itemId: "reminder:r1", ["reminder_id": "r1", "withdrawn": true],
            expiresAt: at("2026-05-12T00:00:00Z"), at: at("2026-05-12T00:00:00Z"))])
        h.advance(to: at("2026-12-31T00:00:00Z"))
        #expect(h.state.reminders.count == 1)
        #expect(fired(h.outputs) == ["reminder.birthday @ 2026-09-01T09:00:00Z"])
    }

    @Test("P-REM-4 re-sending an upsert after it fired does not fire the same occurrence again")
    func upsertAfterFiring() throws {
        var h = reminderHarness()
        try h.process(followup("f1", "2026-04-20T10:00", zone: "UTC"), at: at("2026-04-01T00:00:00Z"))
        h.advance(to: at("2026-04-20T10:05:00Z"))
        #expect(try h.process(followup("f1", "2026-04-20T10:00", zone: "UTC"), at: at("2026-04-20T10:06:00Z")).isEmpty)
        h.advance(to: at("2026-05-01T00:00:00Z"))
        #expect(fired(h.outputs).count == 1)
    }

    @Test("P-REM-4 cancel removes the reminder and withdraws its Upcoming item; it never fires")
    func cancelRemoves() throws {
        var h = reminderHarness()
        try h.process(birthday("r1", "05-15", zone: "UTC"), at: at("2026-05-10T00:00:00Z"))
        try h.process(followup("f1", "2026-05-12T10:00", zone: "UTC", recurrence: .weekly), at: at("2026-05-10T00:00:00Z"))
        let cancelled = try h.process(cancel("r1"), at: at("2026-05-11T00:00:00Z"))
        #expect(cancelled == [Expect.item(
            "rin.reminder.inbox:0:2:0", section: "upcoming", itemId: "reminder:r1", ["reminder_id": "r1", "withdrawn": true],
            expiresAt: at("2026-05-11T00:00:00Z"), at: at("2026-05-11T00:00:00Z"))])
        try h.process(cancel("f1"), at: at("2026-05-11T00:00:00Z"))
        #expect(try h.process(cancel("f1"), at: at("2026-05-11T00:00:01Z")).isEmpty)  // idempotent
        h.advance(to: at("2027-06-01T00:00:00Z"))
        #expect(fired(h.outputs).isEmpty)
        #expect(h.state.reminders.isEmpty)
        #expect(h.processor.nextWakeUp(h.state) == nil)
    }

    @Test("Reminders per user are bounded: a new reminder beyond the bound is rejected, replacing one is not")
    func boundPerUser() throws {
        var settings = ReminderSettings.rin
        settings.maxPerUser = 2
        var h = reminderHarness(settings)
        try h.process(birthday("r1", "01-01", zone: "UTC"), at: at("2026-05-10T00:00:00Z"))
        try h.process(birthday("r2", "01-02", zone: "UTC"), at: at("2026-05-10T00:00:00Z"))
        #expect(throws: RecordError(
            "user already has 2 reminders, the most allowed (upstream.reminders.max_per_user); reminder 'r3' was not added")) {
            try h.process(birthday("r3", "01-03", zone: "UTC"), at: at("2026-05-10T00:00:00Z"))
        }
        try h.process(birthday("r2", "02-02", zone: "UTC"), at: at("2026-05-10T00:00:00Z"))
        #expect(h.state.reminders.map(\.reminderId) == ["r1", "r2"])
        // The processor itself (not only the harness) leaves the state untouched when it rejects.
        var state = h.state
        var context = ProcessingContext(now: at("2026-05-11T00:00:00Z"), userId: "u1", ids: OutputIDs(origin: source(topic, 99)))
        #expect(throws: RecordError.self) {
            try h.processor.process(birthday("r4", "01-04", zone: "UTC"), state: &state, context: &context)
        }
        #expect(state == h.state)
        #expect(context.outputs.isEmpty)
    }

    @Test("A finished one-off follow-up stops counting against the bound once its grace has passed")
    func finishedRemindersArePurged() throws {
        var settings = ReminderSettings.rin
        settings.maxPerUser = 1
        var h = reminderHarness(settings)
        try h.process(followup("f1", "2026-05-10T10:00", zone: "UTC"), at: at("2026-05-10T00:00:00Z"))
        h.advance(to: at("2026-05-10T10:00:00Z"))
        #expect(throws: RecordError.self) {  // still within the 60-minute grace: kept, so a re-send cannot fire it twice
            try h.process(followup("f2", "2026-05-12T10:00", zone: "UTC"), at: at("2026-05-10T10:30:00Z"))
        }
        try h.process(followup("f2", "2026-05-12T10:00", zone: "UTC"), at: at("2026-05-10T11:00:00Z"))
        #expect(h.state.reminders.map(\.reminderId) == ["f2"])
    }

    @Test("500 reminders for one user stay cheap to schedule and fire")
    func manyReminders() throws {
        var h = reminderHarness()
        for i in 0..<500 {
            let month = i % 12 + 1
            let day = i % 28 + 1
            let md = (month < 10 ? "0" : "") + "\(month)-" + (day < 10 ? "0" : "") + "\(day)"
            try h.process(birthday("r\(1000 + i)", md, zone: "Europe/Paris", contact: "c\(i)"), at: at("2026-01-01T00:00:00Z"))
        }
        h.advance(to: at("2027-01-01T00:00:00Z"))
        #expect(h.outputs.compactMap(\.intent).count == 500)
    }
}
