import FleetModel
import Foundation
import Testing
import UpstreamProcessors

@Suite("Segment traffic generator and fleet invariants")
struct SegmentTrafficTests {
    @Test("The generator is deterministic: same seed, byte-identical records; another seed differs")
    func deterministic() {
        let a = SegmentTraffic(seed: 7)
        let b = SegmentTraffic(seed: 7)
        let c = SegmentTraffic(seed: 8)
        #expect(a.inputs.map { RecordCodec.encode($0.record) } == b.inputs.map { RecordCodec.encode($0.record) })
        #expect(a.inputs.map(\.time) == b.inputs.map(\.time))
        #expect(a.inputs.map { RecordCodec.encode($0.record) } != c.inputs.map { RecordCodec.encode($0.record) })
    }

    @Test("Generated records are well-formed: they decode and validate on their topic, ids unique, time-ordered within 60 days")
    func wellFormed() throws {
        let traffic = SegmentTraffic()
        #expect(traffic.users.count == 9)
        var ids: Set<String> = []
        var previous = traffic.start
        let end = traffic.start + .days(Int64(traffic.days) + 2)
        for input in traffic.inputs {
            let decoded = try RecordCodec.decode(RecordCodec.encode(input.record), topic: input.topic)
            #expect(decoded == input.record)
            #expect(ids.insert(input.record.id).inserted, "duplicate id \(input.record.id)")
            #expect(input.time >= previous && input.time < end)
            previous = input.time
        }
        let topics = Set(traffic.inputs.map(\.topic))
        #expect(topics == [Topics.appActivity, Topics.scoreBatches, Topics.syncResults, Topics.reminders, Topics.accessRequests])
        for user in traffic.users {
            let first = traffic.inputs.first { $0.record.userId == user.id }
            #expect(first?.record.type == "user.signed_up")
        }
    }

    @Test("The traffic renders as fleetctl simulate JSONL: one envelope per record with at, key, topic and the record")
    func jsonLines() throws {
        let traffic = SegmentTraffic()
        let lines = traffic.jsonLines.split(separator: "\n")
        #expect(lines.count == traffic.inputs.count)
        for (line, input) in zip(lines, traffic.inputs) {
            let envelope = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
            #expect(envelope["at"] == .string(input.time.rfc3339))
            #expect(envelope["topic"] == .string(input.topic))
            #expect(envelope["key"] == .string(input.record.userId))
            let value = try JSONEncoder().encode(envelope["value"])
            #expect(try RecordCodec.decode(Array(value), topic: input.topic) == input.record)
        }
        #expect(lines.first?.hasPrefix(#"{"at":""#) == true)
    }

    @Test("§2.1 open cadence per segment: power 3–5 a week, regular 1–2 a week, casual 2–4 a month; lapsing users as described")
    func segmentCadence() {
        let traffic = SegmentTraffic()
        for user in traffic.users {
            let opens = traffic.inputs.filter { $0.record.userId == user.id && $0.record.type == "app.opened" }
            let perDay = Double(opens.count) / Double(traffic.days)
            switch (user.segment, user.stopsOpeningOnDay, user.awayDays) {
            case (_, .some, _): #expect(opens.count == 1, "\(user.id) opens only at sign-up")
            case (_, _, .some(let away)):
                let awayStart = traffic.start + .days(Int64(away.lowerBound) + 1)
                let awayEnd = traffic.start + .days(Int64(away.upperBound) - 1)
                #expect(!opens.contains { $0.time > awayStart && $0.time < awayEnd })
            case (.power, nil, nil): #expect((3.0 / 7...5.0 / 7 + 0.02).contains(perDay), "\(user.id): \(opens.count) opens")
            case (.regular, nil, nil): #expect((1.0 / 7...2.0 / 7 + 0.02).contains(perDay), "\(user.id): \(opens.count) opens")
            case (.casual, nil, nil): #expect((2.0 / 30...4.0 / 30 + 0.02).contains(perDay), "\(user.id): \(opens.count) opens")
            }
        }
    }

    @Test("The upstream workers process every generated upstream record without rejecting any")
    func upstreamAcceptsTraffic() throws {
        let traffic = SegmentTraffic()
        let processors = UpstreamProcessors()
        var score: [String: Harness<ScoreProcessor>] = [:]
        var sync: [String: Harness<SyncProcessor>] = [:]
        var access: [String: Harness<AccessProcessor>] = [:]
        var reminder: [String: Harness<ReminderProcessor>] = [:]
        for input in traffic.inputs {
            let user = input.record.userId
            switch UpstreamProcessors.worker(for: input.topic) {
            case .score?: try score[user, default: Harness(processors.score, userId: user, topic: input.topic)].process(input.record, at: input.time)
            case .sync?: try sync[user, default: Harness(processors.sync, userId: user, topic: input.topic)].process(input.record, at: input.time)
            case .access?: try access[user, default: Harness(processors.access, userId: user, topic: input.topic)].process(input.record, at: input.time)
            case .reminder?:
                try reminder[user, default: Harness(processors.reminder, userId: user, topic: Topics.reminderInbox)].process(input.record, at: input.time)
            default: break
            }
        }
        let end = traffic.start + .days(Int64(traffic.days))
        for key in reminder.keys.sorted() { reminder[key]?.advance(to: end) }
        let outputs = score.values.flatMap(\.outputs) + sync.values.flatMap(\.outputs) + access.values.flatMap(\.outputs)
            + reminder.values.flatMap(\.outputs)
        let kinds = Set(outputs.compactMap(\.intent).map(\.notification))
        #expect(kinds.isSuperset(of: [
            "score.updated", "contacts.dedup_ready", "contacts.enrichment", "reminder.birthday", "reminder.followup",
            "security.access_request", "security.new_signin",
        ]))
        for output in outputs {
            _ = try RecordCodec.decode(RecordCodec.encode(output.record), topic: Topics.deliveryInbox)
        }
    }

    // MARK: - The checkers themselves

    private static let nyUser = TimedInput(
        topic: Topics.appActivity, time: at("2026-03-01T12:00:00Z"),
        record: .userSignedUp(UserSignedUp(id: "s", userId: "u1", timeZone: Zone(identifier: "America/New_York") ?? .utc)))

    private func delivery(_ notification: String, _ category: String, at time: String, channel: DeliveryChannel = .push) -> OutputRecord {
        OutputRecord(topic: Topics.deliveries, timestamp: at(time), record: .delivery(Delivery(
            id: "d-\(time)-\(notification)", userId: "u1", notificationId: "n-\(time)", channel: channel, notification: notification,
            category: category, title: "t", body: "b", deepLink: "rin://home", mergedIntents: [])))
    }

    @Test("P-BUD-1 checker: a fourth non-security delivery on one local day is a violation; security and the next local day are not")
    func budgetChecker() {
        let checker = FleetInvariants(inputs: [Self.nyUser])
        let ok = [
            delivery("score.updated", "SCORE", at: "2026-03-02T14:00:00Z"),
            delivery("contacts.dedup_ready", "CONTACTS", at: "2026-03-02T15:00:00Z"),
            delivery("security.access_request", "SECURITY", at: "2026-03-02T16:00:00Z"),
            delivery("reminder.birthday", "REMINDER", at: "2026-03-02T17:00:00Z"),
            delivery("contacts.enrichment", "CONTACTS", at: "2026-03-03T04:30:00Z"),  // 23:30 local: still 2 March
        ]
        #expect(checker.dailyBudget(Array(ok.prefix(4))).isEmpty)
        #expect(checker.dailyBudget(ok) == [InvariantViolation(
            rule: "P-BUD-1", userId: "u1", time: at("2026-03-03T04:30:00Z"), detail: "more than 3 non-security deliveries on local day 2026-03-02")])
        let nextDay = Array(ok.prefix(4)) + [delivery("contacts.enrichment", "CONTACTS", at: "2026-03-03T05:30:00Z")]  // 00:30 local, 3 March
        #expect(checker.dailyBudget(nextDay).isEmpty)
    }

    @Test("P-LAP-3 P-LAP-5 checker: quiet mode allows only one tier notification per 7 days; dormant allows no push")
    func quietModeChecker() {
        let checker = FleetInvariants(inputs: [Self.nyUser])
        #expect(checker.quietMode([delivery("score.updated", "SCORE", at: "2026-03-14T15:00:00Z")]).isEmpty)  // 13 days
        #expect(checker.quietMode([delivery("score.updated", "SCORE", at: "2026-03-15T15:00:00Z")]).map(\.rule) == ["P-LAP-3"])
        #expect(checker.quietMode([
            delivery("retention.lapsed_summary", "CONTACTS", at: "2026-03-15T15:00:00Z"),
            delivery("reminder.birthday", "REMINDER", at: "2026-03-16T15:00:00Z"),
            delivery("retention.value_reminder", "CONTACTS", at: "2026-03-31T15:00:00Z"),
        ]).isEmpty)
        #expect(checker.quietMode([
            delivery("retention.lapsed_summary", "CONTACTS", at: "2026-03-15T15:00:00Z"),
            delivery("retention.value_reminder", "CONTACTS", at: "2026-03-20T15:00:00Z"),
        ]).map(\.detail) == ["second quiet-mode notification within 7 days (previous at 2026-03-15T15:00:00Z)"])
        #expect(checker.quietMode([delivery("reminder.birthday", "REMINDER", at: "2026-05-01T15:00:00Z")]).map(\.rule) == ["P-LAP-5"])
        #expect(checker.quietMode([delivery("retention.value_reminder", "CONTACTS", at: "2026-05-01T15:00:00Z", channel: .email)]).isEmpty)
    }

    @Test("P-IDEM-1 checker: two records with one id are a violation, on any topic")
    func distinctIdsChecker() {
        let checker = FleetInvariants(inputs: [Self.nyUser])
        let first = delivery("score.updated", "SCORE", at: "2026-03-02T14:00:00Z")
        let decision = OutputRecord(topic: Topics.decisions, timestamp: at("2026-03-02T14:00:00Z"), record: .decision(Decision(
            id: "rin.score.batches:0:0:0:1", userId: "u1", intentId: "rin.score.batches:0:0:0", outcome: .delivered,
            reason: "within_budget", notificationId: "n", rule: "P-BUD-1")))
        #expect(checker.distinctIds([first, decision]).isEmpty)
        var clash = decision
        if case .decision(var d) = clash.record { d.id = first.record.id; clash.record = .decision(d) }
        #expect(checker.distinctIds([first, decision, clash]).map(\.detail)
            == ["id d-2026-03-02T14:00:00Z-score.updated of a decision on rin.notify.decisions was used before"])
    }

    @Test("P-LAP-6 checker: a tier notification twice in one lapse is a violation; once per lapse is not")
    func tierChecker() {
        let reopened = TimedInput(topic: Topics.appActivity, time: at("2026-03-20T12:00:00Z"), record: .appOpened(AppOpened(id: "o", userId: "u1", entrySource: .organic)))
        let checker = FleetInvariants(inputs: [Self.nyUser, reopened])
        #expect(checker.tiersOncePerLapse([
            delivery("retention.lapsed_summary", "CONTACTS", at: "2026-03-15T15:00:00Z"),
            delivery("retention.lapsed_summary", "CONTACTS", at: "2026-04-04T15:00:00Z"),
        ]).isEmpty)
        #expect(checker.tiersOncePerLapse([
            delivery("retention.lapsed_summary", "CONTACTS", at: "2026-03-15T15:00:00Z"),
            delivery("retention.lapsed_summary", "CONTACTS", at: "2026-03-18T15:00:00Z"),
        ]).map(\.rule) == ["P-LAP-6"])
    }
}
