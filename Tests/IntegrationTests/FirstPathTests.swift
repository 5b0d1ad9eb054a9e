import FleetModel
import FleetWorkers
import Kafka
import Testing
import UpstreamProcessors
import DeliveryPolicy

/// The first path through the fleet on a real broker: access requests become deliveries, the
/// plain daily cap holds, bad records are dead-lettered without stopping the partition.
@Suite("First path through the fleet", .enabled(if: FleetHarness.brokerAvailable), .serialized)
struct FirstPathTests {
    @Test("an access request at night travels from its topic to a delivery (P-ACC-1)")
    func accessRequestIsDelivered() async throws {
        let fleet = try await FleetHarness.make()
        defer { Task { await fleet.tearDown() } }
        let access = try fleet.start(.access, AccessProcessor())
        let delivery = try fleet.start(.delivery, try DeliveryEngine(profile: PolicyProfile.shipped("rin")))
        defer { access.cancel(); delivery.cancel() }

        let request = AccessRequested(id: "acc-1", userId: "u-night", requestId: "req-1", requesterName: "Dana", field: "phone number")
        try await fleet.produce([(.accessRequested(request), .at("2026-11-21T02:30:00Z"))], to: Topics.accessRequests)

        let deliveries = try await fleet.records(Topics.deliveries, count: 1)
        let decisions = try await fleet.records(Topics.decisions, count: 1)
        guard case .delivery(let sent)? = deliveries.first, case .decision(let decision)? = decisions.first else {
            Issue.record("expected one delivery and one decision, got \(deliveries) and \(decisions)")
            return
        }
        #expect(sent.userId == "u-night")
        #expect(sent.notification == "security.access_request")
        #expect(sent.body == "Dana asked to see your phone number.")
        #expect(sent.deepLink == "rin://security/inbox")
        #expect(decision.outcome == .delivered)
        #expect(decision.notificationId == sent.notificationId)
        // Ids derive from the origin's log coordinates (logical names, whatever the namespace):
        // the access request's, and the intent's position among that step's outputs.
        #expect(sent.id.hasPrefix("rin.security.access-requests:0:0:0:"))
    }

    @Test("the runtime decides on Kafka exactly what the pure fold decides; the budget suppresses with its reason (P-BUD-1)")
    func runtimeMatchesFold() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        let delivery = try fleet.start(.delivery, engine)
        defer { delivery.cancel() }

        let day = "2026-11-21T"
        let intents: [(FleetRecord, Timestamp)] = [
            (.intent(Fixtures.scoreIntent(id: "i1", user: "u-cap", old: 70, new: 74)), .at(day + "09:00:00Z")),
            (.intent(Fixtures.dedupIntent(id: "i2", user: "u-cap", count: 3)), .at(day + "10:00:00Z")),
            (.intent(Fixtures.securityIntent(id: "i3", user: "u-cap")), .at(day + "10:30:00Z")),
            (.intent(Fixtures.enrichmentIntent(id: "i4", user: "u-cap", names: ["Ana"])), .at(day + "11:00:00Z")),
            (.intent(Fixtures.dedupIntent(id: "i5", user: "u-cap", count: 4)), .at(day + "12:00:00Z")),
            (.intent(Fixtures.scoreIntent(id: "i6", user: "u-cap", old: 74, new: 80)), .at(day + "18:00:00Z")),
        ]
        // The same log folded in memory: what the worker must decide.
        var fold = PartitionFold(processor: engine)
        var expected: [Decision] = []
        for (offset, (record, time)) in intents.enumerated() {
            let step = fold.apply(record, timestamp: time, coordinates: SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: Int64(offset)))
            expected += step.outputs.compactMap { if case .decision(let d) = $0.record { d } else { nil } }
        }
        #expect(expected.contains { $0.outcome == .suppressed && $0.rule == "P-BUD-1" }, "the fixture must exhaust the budget")

        try await fleet.produce(intents, to: Topics.deliveryInbox)
        let decisions = try await fleet.records(Topics.decisions, count: expected.count).compactMap { record -> Decision? in
            if case .decision(let d) = record { return d } else { return nil }
        }
        // Byte-identical records, ids included: the runtime is the fold plus Kafka.
        #expect(decisions == expected)
    }

    @Test("a malformed record lands in the DLQ with its error and the partition keeps flowing")
    func malformedRecordIsDeadLettered() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let delivery = try fleet.start(.delivery, try DeliveryEngine(profile: PolicyProfile.shipped("rin")))
        defer { delivery.cancel() }

        let time = Timestamp.at("2026-11-21T09:00:00Z")
        try await fleet.produce([(.intent(Fixtures.securityIntent(id: "before", user: "u-dlq")), time)], to: Topics.deliveryInbox)
        try await fleet.produceRaw(key: "u-dlq", value: Array(#"{"v":1,"type":"intent","id":"bad","user_id":"u-dlq"}"#.utf8), to: Topics.deliveryInbox, at: time)
        try await fleet.produceRaw(key: "u-dlq", value: Array("not json at all".utf8), to: Topics.deliveryInbox, at: time)
        try await fleet.produce([(.intent(Fixtures.securityIntent(id: "after", user: "u-dlq")), time)], to: Topics.deliveryInbox)

        let dead = try await fleet.read(Topics.deadLetter(of: Topics.deliveryInbox), count: 2)
        #expect(dead.count == 2)
        #expect(dead.map { String(decoding: $0.header("error") ?? [], as: UTF8.self) }
                == ["missing required field 'notification'", "not valid JSON"])
        #expect(dead.map { String(decoding: $0.header("source-topic") ?? [], as: UTF8.self) }
                == [Topics.deliveryInbox, Topics.deliveryInbox])
        #expect(dead.map { String(decoding: $0.header("source-offset") ?? [], as: UTF8.self) } == ["1", "2"])
        #expect(dead.first?.value == Array(#"{"v":1,"type":"intent","id":"bad","user_id":"u-dlq"}"#.utf8))

        let decisions = try await fleet.records(Topics.decisions, count: 2)
        #expect(decisions.compactMap { if case .decision(let d) = $0 { d.intentId } else { nil } } == ["before", "after"])
    }
}
