import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing

/// `fleetctl explain` without a broker: timelines built from logs an in-memory delivery worker
/// wrote (`InMemoryDeliveryWorker`), checked chain by chain and in their text and JSON forms.
@Suite("Explain timeline")
struct ExplainTimelineTests {
    static let profile = ExplainScenario.engine.profile

    static func budgetTimeline(_ window: TimeWindow = .all) -> UserTimeline {
        let user = ExplainScenario.budgetUser
        let partition = KeyPartitioner.partition(forKey: user, partitions: 2)
        return UserTimeline(
            log: ExplainScenario.log(user: user, entries: ExplainScenario.budgetDay(), partition: partition),
            window: window, profile: profile)
    }

    static func quietTimeline(_ window: TimeWindow = .all) -> UserTimeline {
        let user = ExplainScenario.quietUser
        let partition = KeyPartitioner.partition(forKey: user, partitions: 2)
        return UserTimeline(
            log: ExplainScenario.log(user: user, entries: ExplainScenario.quietNight(), partition: partition),
            window: window, profile: profile)
    }

    @Test("a suppressed notification's chain: intent → suppressed daily_budget by P-BUD-1 when the tick fired its window, with the budget used up")
    func suppressedChain() throws {
        let timeline = Self.budgetTimeline()
        #expect(timeline.chains.map(\.intentId) == ["b1", "b2", "b3", "b4"])
        #expect(timeline.chains.prefix(3).allSatisfy { $0.finalOutcome == .delivered })
        // b1's window closed when b2 arrived: the record was b2, the decision a timer's.
        let first = try #require(timeline.chains.first?.links.first)
        #expect(first.firedByTimer && first.input.firedTimers == false)
        try expectInOrder(TimelineRendering.text(timeline), ["delivered: within_budget (P-BUD-1) at inbox[", "(timer fired by intent b2)"])
        let chain = try #require(timeline.chains.last)
        #expect(chain.intent?.notification == "contacts.enrichment")
        #expect(chain.arrivedAt == .at("2026-11-21T12:00:00Z"))
        let link = try #require(chain.links.first)
        #expect(chain.links.count == 1)
        #expect(link.decision.outcome == .suppressed)
        #expect(link.decision.reason == "daily_budget")
        #expect(link.decision.rule == "P-BUD-1")  // P-BUD-1
        #expect(link.input == .tick(id: "tick-budget"))
        #expect(link.delivery == nil)
        #expect(link.state.map(\.key) == ["budget"])
        #expect(link.state.first?.text.hasPrefix("budget 3/3 used on 2026-11-21 (UTC)") == true)

        // The timeline: the tick's step decides b4, and the budget line rose to 3/3 on the way.
        let tickStep = try #require(timeline.steps.last)
        #expect(tickStep.input == .tick(id: "tick-budget"))
        #expect(tickStep.outputs.contains { if case .decision(let d) = $0.record { d.intentId == "b4" } else { false } })
        let budgetLines = timeline.steps.flatMap(\.stateChanges).filter { $0.key == "budget" }.compactMap(\.after)
        #expect(budgetLines.contains { $0.hasPrefix("budget 3/3 used") })

        let text = TimelineRendering.text(timeline)
        try expectInOrder(text, [
            "intent b4 arrived: contacts.enrichment (CONTACTS), from test.source:0:0",
            "tick tick-budget: log time moved, this user's timers fired",
            "decision   b4 contacts.enrichment suppressed: daily_budget (P-BUD-1)",
            "b4  contacts.enrichment (CONTACTS), from test.source:0:0 -> suppressed",
            "2026-11-21T12:00:30Z  suppressed: daily_budget (P-BUD-1) at inbox[",
            "(timer fired by tick tick-budget)",
            "state: budget 3/3 used on 2026-11-21 (UTC)",
        ])
    }

    @Test("a deferred notification's chain: intent → deferred until 07:00 by P-DND-1 → the morning tick fires the timer → delivered with its copy")
    func deferredChain() throws {
        let timeline = Self.quietTimeline()
        let chain = try #require(timeline.chains.first)
        #expect(timeline.chains.count == 1)
        #expect(chain.intentId == "q1")
        #expect(chain.links.map(\.decision.outcome) == [.deferred, .delivered])
        let deferred = chain.links[0], delivered = chain.links[1]
        #expect(deferred.decision.rule == "P-DND-1")  // P-DND-1
        #expect(deferred.decision.reason == "quiet_hours")
        #expect(deferred.decision.until == .at("2026-11-22T07:00:00Z"))
        #expect(deferred.input == .tick(id: "tick-night"))
        #expect(deferred.state.map(\.text).contains("quiet hours 22:00–07:00 UTC (profile default)"))
        #expect(delivered.input == .tick(id: "tick-morning"))
        #expect(delivered.at == .at("2026-11-22T07:00:00Z"))
        #expect(deferred.delivery == nil)
        let delivery = try #require(delivered.delivery)
        #expect(delivery.notification == "score.updated")
        #expect(delivery.body.contains("50 to 58"))
        #expect(delivered.decision.notificationId == delivery.notificationId)

        // The pending notification appears as deferred, then is released by the morning step.
        let pending = timeline.steps.flatMap(\.stateChanges).filter { $0.key.hasPrefix(StateFacts.pendingPrefix) }
        #expect(pending.contains { $0.after?.contains("deferred until 2026-11-22T07:00:00Z (07:00 UTC) (P-DND-1)") == true })
        #expect(pending.last?.after == nil)

        try expectInOrder(TimelineRendering.text(timeline), [
            "intent q1 arrived: score.updated (SCORE)",
            "tick tick-night: log time moved, this user's timers fired",
            "decision   q1 score.updated deferred until 2026-11-22T07:00:00Z: quiet_hours (P-DND-1)",
            "tick tick-morning: log time moved, this user's timers fired",
            "delivery   \(delivery.notificationId) push score.updated: \"\(delivery.title)\" — \"\(delivery.body)\"",
            "decision   q1 score.updated delivered: quiet_hours_ended (P-DND-1)",
            "q1  score.updated (SCORE), from test.source:0:0 -> delivered",
            "deferred until 2026-11-22T07:00:00Z: quiet_hours (P-DND-1) at inbox[",
            "(timer fired by tick tick-night)",
            "state: quiet hours 22:00–07:00 UTC (profile default)",
            "(timer fired by tick tick-morning), delivered as \(delivery.notificationId)",
        ])
    }

    /// Issue 15: "released: pending digest …: scheduled for 09:00" was the last word on a digest
    /// that never went out.
    @Test("P-BUD-5 P-BUD-1 a digested intent's chain ends in the digest's own decision: suppressed daily_budget at 09:00, after the 07:00 releases spent the budget")
    func digestChain() throws {
        let user = ExplainScenario.digestUser
        let timeline = UserTimeline(
            log: ExplainScenario.log(user: user, entries: ExplainScenario.digestDays(), partition: 0), window: .all, profile: Self.profile)
        let chain = try #require(timeline.chains.first { $0.intentId == "g7" })
        #expect(chain.finalOutcome == .digested)  // the intent's own outcome; the digest's decision follows it
        #expect(chain.links.map { [$0.decision.kind?.rawValue ?? "intent", $0.decision.outcome.rawValue, $0.decision.reason ?? "", $0.decision.rule] } == [
            ["intent", "digested", "daily_budget", "P-BUD-5"],
            ["digest", "suppressed", "daily_budget", "P-BUD-1"],
        ])
        let digested = chain.links[0], digest = chain.links[1]
        #expect(digest.decision.notificationId == digested.decision.notificationId)
        #expect(digest.decision.intentId == nil)
        #expect(digest.input == .tick(id: "tick-nine") && digest.firedByTimer)
        #expect(digest.delivery == nil)
        #expect(digest.state.first?.text.hasPrefix("budget 3/3 used on 2026-11-22 (UTC)") == true)
        let id = try #require(digest.decision.notificationId)

        // Every digested intent leads to the same decision.
        let digestedChains = timeline.chains.filter { $0.links.contains { $0.decision.outcome == .digested } }
        #expect(digestedChains.count >= 2)
        #expect(digestedChains.allSatisfy { $0.links.last?.decision == digest.decision })

        try expectInOrder(TimelineRendering.text(timeline), [
            "decision   g7 contacts.enrichment digested: daily_budget (P-BUD-5), notification \(id)",
            "tick tick-seven: log time moved, this user's timers fired",
            "tick tick-nine: log time moved, this user's timers fired",
            "decision   digest \(id) suppressed: daily_budget (P-BUD-1)",
            "released: pending digest \(id): scheduled for 2026-11-22T09:00:00Z",
            "g7  contacts.enrichment (CONTACTS), from test.source:0:0 -> digested",
            "digested: daily_budget (P-BUD-5) at inbox[",
            "digest \(id) suppressed: daily_budget (P-BUD-1) at inbox[",
            "(timer fired by tick tick-nine)",
            "state: budget 3/3 used on 2026-11-22 (UTC)",
        ])
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(TimelineRendering.json(timeline).utf8))
        let links = try #require(document["intents"]?.arrayValue?.first { $0["intent_id"]?.stringValue == "g7" }?["links"]?.arrayValue)
        #expect(links.last?["decision"]?["kind"]?.stringValue == "digest")
        #expect(links.last?["decision"]?["intent_id"] == nil)
        #expect(links.last?["decision"]?["notification_id"]?.stringValue == id)
    }

    /// Issue 15: explain showed the summary deferred, then released, and nothing after it.
    @Test("P-LAP-2 P-LAP-3 the lapsed user's timeline: the 14-day summary deferred to 07:00 (P-DND-1), then its delivery and decision")
    func lapsedSummaryTimeline() throws {
        let user = ExplainScenario.lapsedUser
        let timeline = UserTimeline(
            log: ExplainScenario.log(user: user, entries: ExplainScenario.lapsedFortnight(), partition: 0), window: .all, profile: Self.profile)
        let decisions = timeline.steps.flatMap(\.outputs).compactMap { output -> Decision? in
            if case .decision(let d) = output.record, d.kind != nil { d } else { nil }
        }
        #expect(decisions.map { [$0.kind?.rawValue ?? "", $0.outcome.rawValue, $0.reason ?? "", $0.rule] } == [
            ["lapsed_summary", "deferred", "quiet_hours", "P-DND-1"],
            ["lapsed_summary", "delivered", "quiet_hours_ended", "P-DND-1"],
        ])
        let id = try #require(decisions.first?.notificationId)
        try expectInOrder(TimelineRendering.text(timeline), [
            "tick tick-midnight: log time moved, this user's timers fired",
            "decision   lapsed_summary \(id) deferred until 2026-10-15T07:00:00Z: quiet_hours (P-DND-1)",
            "pending lapsed summary \(id): deferred until 2026-10-15T07:00:00Z (07:00 UTC) (P-DND-1)",
            "tick tick-seven: log time moved, this user's timers fired",
            "delivery   \(id) push retention.lapsed_summary",
            "decision   lapsed_summary \(id) delivered: quiet_hours_ended (P-DND-1)",
            "released: pending lapsed summary \(id)",
        ])
    }

    @Test("--since/--until restrict the steps by log time; a shown intent keeps the decisions from before the range")
    func windowFilters() throws {
        let morning = Self.quietTimeline(TimeWindow(since: .at("2026-11-22T00:00:00Z")))
        #expect(morning.steps.map(\.input) == [.tick(id: "tick-morning")])
        #expect(morning.chains.first?.links.map(\.decision.outcome) == [.deferred, .delivered])

        let night = Self.quietTimeline(TimeWindow(since: .at("2026-11-21T22:00:00Z"), until: .at("2026-11-22T00:00:00Z")))
        #expect(night.steps.map(\.input).count == 2)
        #expect(night.steps.allSatisfy { $0.at < .at("2026-11-22T00:00:00Z") })

        let before = Self.budgetTimeline(TimeWindow(until: .at("2026-11-21T09:00:00Z")))
        #expect(before.isEmpty)
        #expect(TimelineRendering.text(before).contains("no records for user u-budget in this range"))
    }

    @Test("a user with no records gets 'no records for user …'")
    func unknownUser() {
        let timeline = UserTimeline(
            log: ExplainScenario.log(user: "u-nobody", entries: ExplainScenario.budgetDay(), partition: 0),
            window: .all, profile: Self.profile)
        #expect(timeline.isEmpty && timeline.chains.isEmpty)
        #expect(TimelineRendering.text(timeline).contains("no records for user u-nobody"))
    }

    @Test("--json: one document with the same steps and chains, records in wire format")
    func jsonDocument() throws {
        let timeline = Self.quietTimeline()
        let text = TimelineRendering.json(timeline)
        #expect(text.filter { $0 == "\n" }.count == 1)
        let document = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(document["user"]?.stringValue == ExplainScenario.quietUser)
        #expect(document["steps"]?.arrayValue?.count == timeline.steps.count)
        let links = try #require(document["intents"]?.arrayValue?.first?["links"]?.arrayValue)
        #expect(links.map { $0["decision"]?["outcome"]?.stringValue } == ["deferred", "delivered"])
        #expect(links.first?["decision"]?["rule"]?.stringValue == "P-DND-1")
        #expect(links.last?["delivery"]?["notification"]?.stringValue == "score.updated")
        #expect(links.map { $0["fired_by_timer"]?.boolValue } == [true, true])
        #expect(document["intents"]?.arrayValue?.first?["final_outcome"]?.stringValue == "delivered")
        // Same timeline, same bytes.
        #expect(TimelineRendering.json(Self.quietTimeline()) == text)
    }

    @Test("a settings change shows as the changed state lines only (P-DND-1 quiet hours, P-TIME-1 zone)")
    func settingsChangeLines() throws {
        let settings = SettingsChanged(
            id: "s1", userId: "u-set", timeZone: Zone(identifier: "Europe/Berlin"),
            quietHours: QuietHours(start: LocalTimeOfDay(hour: 21, minute: 0), end: LocalTimeOfDay(hour: 6, minute: 30)))
        let log = ExplainScenario.log(
            user: "u-set", entries: [.init(record: .settingsChanged(settings), time: .at("2026-11-21T08:00:00Z"), key: "u-set")],
            partition: 0)
        let step = try #require(UserTimeline(log: log, window: .all, profile: Self.profile).steps.first)
        let changed = Dictionary(uniqueKeysWithValues: step.stateChanges.map { ($0.key, $0.after) })
        #expect(changed["time_zone"] == "time zone Europe/Berlin")
        #expect(changed["quiet_hours"] == "quiet hours 21:00–06:30 Europe/Berlin (user setting)")
        #expect(changed["push"] == nil)
    }

    @Test("P-TIME-1 a user who chose UTC reads 'time zone UTC'; one who never gave a zone reads 'not set' (both are on UTC)")
    func chosenUTCIsNotUnset() throws {
        let berlin = SettingsChanged(id: "s1", userId: "u-utc", timeZone: Zone(identifier: "Europe/Berlin"))
        let utc = SettingsChanged(id: "s2", userId: "u-utc", timeZone: .utc)
        let log = ExplainScenario.log(user: "u-utc", entries: [
            .init(record: .settingsChanged(berlin), time: .at("2026-11-21T08:00:00Z"), key: "u-utc"),
            .init(record: .settingsChanged(utc), time: .at("2026-11-21T09:00:00Z"), key: "u-utc"),
        ], partition: 0)
        let steps = UserTimeline(log: log, window: .all, profile: Self.profile).steps
        try #require(steps.count == 2)
        let first = try #require(steps[0].stateChanges.first { $0.key == "time_zone" })
        #expect(first.before == "time zone not set (UTC, the default)" && first.after == "time zone Europe/Berlin")
        let second = try #require(steps[1].stateChanges.first { $0.key == "time_zone" })
        #expect(second.before == "time zone Europe/Berlin" && second.after == "time zone UTC")
    }

    @Test("--since/--until accept RFC 3339 and spans back from now")
    func timeBounds() throws {
        let now = Timestamp.at("2026-11-22T12:00:00Z")
        #expect(try TimeWindow.bound("2026-11-21T09:00:00Z", now: now) == .at("2026-11-21T09:00:00Z"))
        #expect(try TimeWindow.bound("24h", now: now) == .at("2026-11-21T12:00:00Z"))
        #expect(try TimeWindow.bound("7d", now: now) == .at("2026-11-15T12:00:00Z"))
        #expect(try TimeWindow.bound("90m", now: now) == .at("2026-11-22T10:30:00Z"))
        #expect(throws: TimeWindowError.self) { try TimeWindow.bound("yesterday", now: now) }
        #expect(throws: TimeWindowError.self) { try TimeWindow.bound("5w", now: now) }
    }
}

/// `fleetctl explain` against the local broker: the delivery worker runs on the runtime, and
/// `Explainer.explain` (what the command calls) reads the user's partition back.
@Suite("Explain on the broker", .enabled(if: FleetHarness.brokerAvailable), .serialized, .timeLimit(.minutes(5)))
struct ExplainBrokerTests {
    @Test("explain reads the user's partition: the suppressed (P-BUD-1) and deferred (P-DND-1) chains equal the in-memory fold's")
    func explainsFromTheBroker() async throws {
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let worker = try fleet.start(.delivery, ExplainScenario.engine)
        defer { worker.cancel() }

        let budgetUser = ExplainScenario.budgetUser, quietUser = ExplainScenario.quietUser
        let budgetPartition = KeyPartitioner.partition(forKey: budgetUser, partitions: 2)
        let quietPartition = KeyPartitioner.partition(forKey: quietUser, partitions: 2)
        try #require(budgetPartition != quietPartition)
        try await ExplainScenario.produce(ExplainScenario.budgetDay(), to: budgetPartition, in: fleet)
        try await ExplainScenario.produce(ExplainScenario.quietNight(), to: quietPartition, in: fleet)
        // b1–b4 and q1 deferred, then delivered.
        #expect(try await fleet.records(Topics.decisions, count: 6, timeout: .seconds(60)).count == 6)

        let reader = FleetTopicReader(
            configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, timeout: .seconds(60), logger: .tests)
        let profile = ExplainScenario.engine.profile
        for (user, entries, partition) in [(budgetUser, ExplainScenario.budgetDay(), budgetPartition),
                                           (quietUser, ExplainScenario.quietNight(), quietPartition)] {
            let expected = UserTimeline(
                log: ExplainScenario.log(user: user, entries: entries, partition: partition), window: .all, profile: profile)
            // History and outputs of one commit are written together; allow the last commit to land.
            var timeline = try await Explainer.explain(user: user, window: .all, profile: profile, reader: reader)
            let deadline = ContinuousClock.now + .seconds(20)
            while timeline.withoutSends != expected, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(500))
                timeline = try await Explainer.explain(user: user, window: .all, profile: profile, reader: reader)
            }
            #expect(timeline.withoutSends == expected)
            #expect(timeline.sends?.deliveries == [:], "no sender ran: explain read the sender's topics and found no sends")
            #expect(timeline.partition == partition)
        }

        let budget = try await Explainer.explain(user: budgetUser, window: .all, profile: profile, reader: reader)
        #expect(budget.chains.last?.links.map { [$0.decision.outcome.rawValue, $0.decision.reason ?? "", $0.decision.rule] }
            == [["suppressed", "daily_budget", "P-BUD-1"]])
        let quiet = try await Explainer.explain(
            user: quietUser, window: TimeWindow(since: .at("2026-11-22T00:00:00Z")), profile: profile, reader: reader)
        #expect(quiet.steps.map(\.input) == [.tick(id: "tick-morning")])
        #expect(quiet.chains.first?.links.map(\.decision.outcome) == [.deferred, .delivered])
        #expect(TimelineRendering.text(quiet).contains("deferred until 2026-11-22T07:00:00Z: quiet_hours (P-DND-1)"))

        let nobody = try await Explainer.explain(user: "u-nobody", window: .all, profile: profile, reader: reader)
        #expect(nobody.isEmpty)
        #expect(TimelineRendering.text(nobody).contains("no records for user u-nobody"))
    }

    /// Issue 16: with one image per changed user per commit unit, the states inside a unit are
    /// re-folded per unit (`UnitRefold`) from the images of only the users the unit folds.
    @Test("P-BUD-1 a user changed several times in one commit unit: explain's per-input state lines are the in-memory fold's")
    func multiChangeUnitsAreRefolded() async throws {
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        // One commit unit for the whole day's records, produced at once.
        let worker = try fleet.start(.delivery, ExplainScenario.engine, ["FLEET_COMMIT_INTERVAL_MS": "4000"])
        defer { worker.cancel() }
        let user = ExplainScenario.budgetUser
        let partition = KeyPartitioner.partition(forKey: user, partitions: 2)
        try await ExplainScenario.produce(ExplainScenario.budgetDay(), to: partition, in: fleet)
        let inMemory = ExplainScenario.log(user: user, entries: ExplainScenario.budgetDay(), partition: partition)
        let decisions = inMemory.outputs.filter { $0.topic == Topics.decisions }.count
        #expect(try await fleet.records(Topics.decisions, count: decisions, timeout: .seconds(60)).count == decisions)

        let reader = FleetTopicReader(
            configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, timeout: .seconds(60), logger: .tests)
        let profile = ExplainScenario.engine.profile
        let expected = UserTimeline(log: inMemory, window: .all, profile: profile)
        var timeline = try await Explainer.explain(user: user, window: .all, profile: profile, reader: reader).withoutSends
        let deadline = ContinuousClock.now + .seconds(20)
        while timeline != expected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(500))
            timeline = try await Explainer.explain(user: user, window: .all, profile: profile, reader: reader).withoutSends
        }
        let read = try await UserLog.read(user: user, from: reader, profile: profile)
        let multi = read.history.compactMap { try? HistoryChange<DeliveryState>($0) }.filter { $0.changed.count > 1 }
        try #require(!multi.isEmpty, "the worker wrote no image of a unit that changed the user more than once")
        #expect(Set(read.refolded.keys.map(\.offset)) == Set(multi.flatMap(\.changed)))
        #expect(timeline == expected)
        #expect(TimelineRendering.text(timeline) == TimelineRendering.text(expected))
    }

}

extension UserTimeline {
    /// The timeline as built from the log alone: what an in-memory fold gives to compare with.
    var withoutSends: UserTimeline {
        var timeline = self
        timeline.sends = nil
        return timeline
    }
}

/// Records an issue unless each of `parts` occurs in `text` after the previous one.
func expectInOrder(_ text: String, _ parts: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
    var rest = text[...]
    for part in parts {
        guard let range = rest.range(of: part) else {
            Issue.record("missing, or out of order: \(part)\n--- in ---\n\(text)", sourceLocation: sourceLocation)
            return
        }
        rest = rest[range.upperBound...]
    }
}
