import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing
import UpstreamProcessors

/// `fleetctl dlq` against the local broker with in-process workers: a dead-lettered record,
/// fixed and redriven, is decided once with the ids it would have had at its original
/// coordinates, and redriving it again (refused, then forced) decides nothing more.
@Suite("Dead-letter redrive", .enabled(if: FleetHarness.brokerAvailable), .serialized)
struct DeadLetterRedriveTests {
    func tool(_ fleet: FleetHarness) -> DeadLetterTool {
        DeadLetterTool(reader: FleetTopicReader(
            configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, timeout: .seconds(60), logger: .tests))
    }

    func decisions(_ records: [FleetRecord]) -> [Decision] {
        records.compactMap { if case .decision(let d) = $0 { d } else { nil } }
    }

    func plan(_ fleet: FleetHarness, _ topic: String, _ id: String, fix: FleetRecord? = nil, force: Bool = false) async throws -> RedrivePlan {
        let log = try await tool(fleet).log(of: topic)
        let selection = DeadLetterSelection(ids: [try #require(DeadLetterID(id))])
        return try RedrivePlan(
            log: log, request: RedriveRequest(selection: selection, force: force, replacementValue: fix.map(RecordCodec.encode)),
            namespace: fleet.namespace)
    }

    @Test("a fixed access request redriven twice yields one intent and one delivery, with its original coordinates' ids (P-IDEM-1, P-ACC-1)")
    func accessRequestRedrive() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let access = try fleet.start(.access, AccessProcessor())
        let delivery = try fleet.start(.delivery, try DeliveryEngine(profile: PolicyProfile.shipped("rin")))
        defer { access.cancel(); delivery.cancel() }

        let night = Timestamp.at("2026-11-21T02:30:00Z")
        let good = AccessRequested(id: "acc-0", userId: "u-fix", requestId: "req-0", requesterName: "Ana", field: "email")
        try await fleet.produce([(.accessRequested(good), night)], to: Topics.accessRequests)
        // The producer's bug: no requester_name. Offset 1 of the source topic.
        try await fleet.produceRaw(
            key: "u-fix", value: Array(#"{"v":1,"type":"access.requested","id":"acc-1","user_id":"u-fix","request_id":"req-1","field":"phone number"}"#.utf8),
            to: Topics.accessRequests, at: night + .minutes(1))
        #expect(try await fleet.read(Topics.deadLetter(of: Topics.accessRequests), count: 1).count == 1)
        #expect(try await fleet.records(Topics.deliveries, count: 1).count == 1)

        // list: the error and the coordinates.
        let log = try await tool(fleet).log(of: Topics.accessRequests)
        let entry = try #require(log.entries.first)
        #expect(log.entries.count == 1)
        #expect(entry.letter.id.description == "rin.security.access-requests:0:1")
        #expect(entry.letter.error == "missing required field 'requester_name'")
        #expect(entry.letter.userId == "u-fix" && entry.letter.type == "access.requested" && !entry.isRedriven)
        let table = DeadLetterRendering.table(log.entries)
        #expect(table.contains("rin.security.access-requests:0:1") && table.contains("missing required field 'requester_name'"))
        #expect(table.contains("2026-11-21T02:31:00Z") && table.contains("pending"))

        // As it is, it would fail again; a fix that is still invalid is refused with the decoder's error.
        let unfixed = try await plan(fleet, Topics.accessRequests, "rin.security.access-requests:0:1")
        #expect(unfixed.copies.isEmpty)
        #expect(unfixed.refusals.map(\.reason) == ["would be dead-lettered again: missing required field 'requester_name' (fix the data with --value-file)"])
        let log2 = try await tool(fleet).log(of: Topics.accessRequests)
        #expect(throws: DeadLetterError.invalidFix(id: entry.letter.id, error: "not valid JSON")) {
            try RedrivePlan(log: log2, request: RedriveRequest(
                selection: DeadLetterSelection(ids: [entry.letter.id]), replacementValue: Array("{oops".utf8)), namespace: fleet.namespace)
        }

        // The data fix, redriven.
        let fixed = AccessRequested(id: "acc-1", userId: "u-fix", requestId: "req-1", requesterName: "Dana", field: "phone number")
        let first = try await plan(fleet, Topics.accessRequests, "rin.security.access-requests:0:1", fix: .accessRequested(fixed))
        #expect(first.copies.count == 1 && first.refusals.isEmpty)
        let sent = await tool(fleet).redrive(first, namespace: fleet.namespace)
        #expect(sent.failure == nil)
        #expect(sent.sent.map(\.copy) == [SourceCoordinates(topic: Topics.accessRequests, partition: 0, offset: 2)])

        // What the access worker would have produced had the fixed record been at offset 1.
        var fold = PartitionFold(processor: AccessProcessor())
        _ = fold.apply(.accessRequested(good), timestamp: night, coordinates: SourceCoordinates(topic: Topics.accessRequests, partition: 0, offset: 0))
        let expected = fold.apply(.accessRequested(fixed), timestamp: night + .minutes(1),
                                  coordinates: SourceCoordinates(topic: Topics.accessRequests, partition: 0, offset: 1))
        let expectedIntents = expected.outputs.compactMap { if case .intent(let i) = $0.record { i.id } else { nil } }
        #expect(expectedIntents == ["rin.security.access-requests:0:1:0"])

        let deliveries = try await fleet.records(Topics.deliveries, count: 2)
        guard deliveries.count == 2, case .delivery(let redriven) = deliveries[1] else {
            Issue.record("expected the redriven request's delivery, got \(deliveries)")
            return
        }
        #expect(redriven.body == "Dana asked to see your phone number.")
        #expect(redriven.id.hasPrefix("rin.security.access-requests:0:1:0:"))
        #expect(decisions(try await fleet.records(Topics.decisions, count: 2)).map(\.intentId).last == expectedIntents.first)

        // list shows where the copy went; a second redrive is refused.
        let after = try await tool(fleet).log(of: Topics.accessRequests)
        #expect(after.entries.map(\.redrives.count) == [1])
        #expect(DeadLetterRendering.table(after.entries).contains("redriven to rin.security.access-requests:0:2"))
        let again = try await plan(fleet, Topics.accessRequests, "rin.security.access-requests:0:1", fix: .accessRequested(fixed))
        #expect(again.copies.isEmpty && again.refusals.count == 1)
        #expect(again.refusals.first?.reason.hasPrefix("already redriven (copy at rin.security.access-requests:0:2") == true)

        // Forced: a second copy under the same id; the access worker has seen req-1 and emits nothing.
        let forced = try await plan(fleet, Topics.accessRequests, "rin.security.access-requests:0:1", fix: .accessRequested(fixed), force: true)
        #expect(forced.copies.count == 1)
        #expect(await tool(fleet).redrive(forced, namespace: fleet.namespace).sent.count == 1)
        // A later request of the same user: once its decision is out, everything before it was processed.
        let sentinel = AccessRequested(id: "acc-9", userId: "u-fix", requestId: "req-9", requesterName: "Eve", field: "address")
        try await fleet.produce([(.accessRequested(sentinel), night + .minutes(5))], to: Topics.accessRequests)
        let all = decisions(try await fleet.records(Topics.decisions, count: 3))
        #expect(all.map(\.intentId) == ["rin.security.access-requests:0:0:0", "rin.security.access-requests:0:1:0", "rin.security.access-requests:0:4:0"])
        #expect(try await tool(fleet).log(of: Topics.accessRequests).entries.map(\.redrives.count) == [2])
    }

    @Test("a bad intent fixed and redriven into the inbox is decided as the fold decides it at its original offset; a forced copy is ignored (P-IDEM-1)")
    func inboxIntentRedrive() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        let delivery = try fleet.start(.delivery, engine)
        defer { delivery.cancel() }

        // Security intents are decided at once (delivered, or suppressed as duplicates), so every
        // intent has its decision when its step ends.
        let time = Timestamp.at("2026-11-21T09:00:00Z")
        let before = Fixtures.securityIntent(id: "before", user: "u-dlq")
        let after = Fixtures.securityIntent(id: "after", user: "u-dlq")
        try await fleet.produce([(.intent(before), time)], to: Topics.deliveryInbox)
        try await fleet.produceRaw(key: "u-dlq", value: Array(#"{"v":1,"type":"intent","id":"bad","user_id":"u-dlq"}"#.utf8),
                                   to: Topics.deliveryInbox, at: time)
        try await fleet.produce([(.intent(after), time)], to: Topics.deliveryInbox)
        #expect(try await fleet.read(Topics.deadLetter(of: Topics.deliveryInbox), count: 1).count == 1)
        let firstTwo = decisions(try await fleet.records(Topics.decisions, count: 2))
        #expect(firstTwo.map(\.intentId) == ["before", "after"])

        let fixed = Fixtures.securityIntent(id: "bad", user: "u-dlq")
        let plan = try await plan(fleet, Topics.deliveryInbox, "rin.delivery.inbox:0:1", fix: .intent(fixed))
        #expect(await tool(fleet).redrive(plan, namespace: fleet.namespace).sent.count == 1)

        // The fold over the log as the worker saw it, with the fixed intent at its original offset.
        var fold = PartitionFold(processor: engine)
        var expected: [Decision] = []
        for (record, offset) in [(before, Int64(0)), (after, 2), (fixed, 1)] {
            let step = fold.apply(.intent(record), timestamp: time, coordinates: SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: offset))
            expected += step.outputs.compactMap { if case .decision(let d) = $0.record { d } else { nil } }
        }
        #expect(expected.last?.intentId == "bad")
        #expect(expected.last?.id.hasPrefix("rin.delivery.inbox:0:1:") == true)
        let written = decisions(try await fleet.records(Topics.decisions, count: expected.count))
        #expect(written == expected)

        // Again: refused; forced: the engine has decided "bad" and ignores the copy.
        let again = try await self.plan(fleet, Topics.deliveryInbox, "rin.delivery.inbox:0:1", fix: .intent(fixed))
        #expect(again.copies.isEmpty && again.refusals.count == 1)
        let forced = try await self.plan(fleet, Topics.deliveryInbox, "rin.delivery.inbox:0:1", fix: .intent(fixed), force: true)
        #expect(await tool(fleet).redrive(forced, namespace: fleet.namespace).sent.count == 1)
        let sentinel = Fixtures.securityIntent(id: "sentinel", user: "u-dlq")
        try await fleet.produce([(.intent(sentinel), time + .minutes(1))], to: Topics.deliveryInbox)
        let all = decisions(try await fleet.records(Topics.decisions, count: expected.count + 1))
        #expect(all.map(\.intentId).filter { $0 == "bad" }.count == expected.filter { $0.intentId == "bad" }.count)
        #expect(all.last?.intentId == "sentinel")
    }

    @Test("a redriven activity record passes the ingest stage with its original coordinates")
    func activityRedriveThroughIngest() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let delivery = try fleet.start(.delivery, try DeliveryEngine(profile: PolicyProfile.shipped("rin")))
        defer { delivery.cancel() }

        let time = Timestamp.at("2026-11-21T09:00:00Z")
        let zone = try #require(Zone(identifier: "Europe/Berlin"))
        let first = UserSignedUp(id: "s-0", userId: "u-in", timeZone: zone)
        try await fleet.produce([(.userSignedUp(first), time)], to: Topics.appActivity)
        try await fleet.produceRaw(key: "u-in", value: Array(#"{"v":1,"type":"user.signed_up","id":"s-1","user_id":"u-in"}"#.utf8),
                                   to: Topics.appActivity, at: time)
        #expect(try await fleet.read(Topics.deadLetter(of: Topics.appActivity), count: 1).count == 1)
        let log = try await tool(fleet).log(of: Topics.appActivity)
        #expect(log.entries.map(\.letter.id.description) == ["rin.app.activity:0:1"])
        #expect(log.entries.map(\.letter.error) == ["missing required field 'time_zone'"])

        let fixed = UserSignedUp(id: "s-1", userId: "u-in", timeZone: zone)
        let plan = try await plan(fleet, Topics.appActivity, "rin.app.activity:0:1", fix: .userSignedUp(fixed))
        #expect(await tool(fleet).redrive(plan, namespace: fleet.namespace).sent.map(\.copy.offset) == [2])

        let inbox = try await fleet.read(Topics.deliveryInbox, count: 2)
        #expect(inbox.count == 2)
        let header = { (name: String) in inbox.last?.header(name).map { String(decoding: $0, as: UTF8.self) } }
        #expect(header(KafkaRecords.Header.sourceTopic) == Topics.appActivity)
        #expect(header(KafkaRecords.Header.sourceOffset) == "1")
        #expect(header(KafkaRecords.Header.redrivenFrom) == "rin.app.activity.dlq:0:0")
        #expect(inbox.last?.value == RecordCodec.encode(.userSignedUp(fixed)))
    }
}
