import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing

/// `fleetctl explain` shows what the sender did with each delivery next to the decision that made
/// it (issue 17 "Receipts"): attempts with the providers' answers from `rin.sender.attempts` and
/// `rin.sender.inbox`, and the receipt from `rin.notify.receipts`, or why there is none yet. The
/// sender's records are written to the topics here, as the sender writes them; the delivery
/// worker runs on the runtime as in production.
@Suite("Explain sends on the broker", .enabled(if: FleetHarness.brokerAvailable), .serialized, .timeLimit(.minutes(5)))
struct ExplainSendsTests {
    static let user = ExplainScenario.budgetUser
    static let profile = ExplainScenario.engine.profile

    @Test("P-BUD-1 each delivery's attempts and receipt show under its decision: retried then sent, fell back to email, still retrying, not taken; none without a sender")
    func attemptsAndReceiptsNextToTheDecision() async throws {
        let fleet = try await FleetHarness.make(partitions: 2)
        defer { Task { await fleet.tearDown() } }
        let worker = try fleet.start(.delivery, ExplainScenario.engine)
        defer { worker.cancel() }
        let partition = KeyPartitioner.partition(forKey: Self.user, partitions: 2)
        try await ExplainScenario.produce(ExplainScenario.budgetDay(), to: partition, in: fleet)
        #expect(try await fleet.records(Topics.decisions, count: 4, timeout: .seconds(60)).count == 4)
        let reader = FleetTopicReader(
            configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), namespace: fleet.namespace, timeout: .seconds(60), logger: .tests)

        // A fleet without the sender (the harness creates every fleet topic, the sender's too):
        // explain works, and says so.
        let admin = try fleet.admin()
        let senderTopics = SendTrail.topics.map(fleet.namespace.physical)
        try await admin.deleteTopics(senderTopics)
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !admin.partitionCounts(topics: senderTopics).values.allSatisfy({ $0 == 0 }) {
            try #require(ContinuousClock.now < deadline, "the sender's topics were not deleted")
            try await Task.sleep(for: .milliseconds(200))
        }
        let deliveries = try await deliveredInOrder(reader: reader)
        try #require(deliveries.count == 3, "b1–b3 are delivered (P-BUD-1 budget 3)")
        let bare = try await Explainer.explain(user: Self.user, window: .all, profile: Self.profile, reader: reader)
        let bareSends = try #require(bare.sends)
        #expect(bareSends.senderAbsent && Set(bareSends.missingTopics) == Set(SendTrail.topics))
        try expectInOrder(TimelineRendering.text(bare), [
            "sender: no topic rin.notify.receipts, rin.sender.attempts, rin.sender.inbox (this fleet runs no sender",
            "delivered as \(deliveries[0].notificationId)", "send: no receipt: no sender in this fleet",
        ])

        try await admin.createTopics(senderTopics.map { NewTopic(name: $0, partitions: 2) })
        let untaken = try await Explainer.explain(user: Self.user, window: .all, profile: Self.profile, reader: reader)
        #expect(untaken.sends?.missingTopics == [])
        #expect(TimelineRendering.text(untaken).contains("send: no receipt yet: the sender has not taken this delivery (not running, or behind)"))

        // What the sender writes: the first delivery retried once then sent; the second's only
        // device is dead, so it fell back to email, sent; the third waits for a retry.
        let sent = deliveries[0], fellBack = deliveries[1], retrying = deliveries[2]
        let t0 = Timestamp.at("2026-11-21T13:00:00Z")
        let a1 = attempt(sent, try: 1, provider: .apns), a2 = attempt(sent, try: 2, provider: .apns)
        let b1 = attempt(fellBack, try: 1, provider: .apns), b2 = attempt(fellBack, try: 1, provider: .email, device: "mail")
        let c1 = attempt(retrying, try: 1, provider: .fcm, device: "pixel"), c2 = attempt(retrying, try: 2, provider: .fcm, device: "pixel")
        try await fleet.produce([a1, a2, b1, b2, c1, a1, c2].enumerated().map { (.sender(.attempt($1)), t0 + .seconds(Int64($0))) },
            to: Topics.sendAttempts)
        try await fleet.produce([
            result(a1, .retryable, status: 503, reason: "ServiceUnavailable", retryAfterMs: 30_000),
            result(a2, .accepted, status: 200, providerId: "apns-7f3c"),
            result(b1, .invalidToken, status: 410, reason: "Unregistered"),
            result(b2, .accepted, status: 200, providerId: "email-42"),
            result(c1, .retryable, reason: "timeout"),
            // A crashed effect stage's second copy of the same answer.
            result(a1, .retryable, status: 503, reason: "ServiceUnavailable", retryAfterMs: 30_000),
        ].enumerated().map { (.sender(.result($1)), t0 + .seconds(Int64(10 + $0))) }, to: Topics.senderInbox)
        try await fleet.produce([
            Receipt(id: "r1", userId: Self.user, deliveryId: sent.id, notificationId: sent.notificationId, channel: .push,
                status: .sent, attempts: 2, provider: .apns, providerId: "apns-7f3c"),
            Receipt(id: "r2", userId: Self.user, deliveryId: fellBack.id, notificationId: fellBack.notificationId, channel: .push,
                status: .fellBack, attempts: 1, provider: .apns, reason: "Unregistered"),
            Receipt(id: "r3", userId: Self.user, deliveryId: fellBack.id, notificationId: fellBack.notificationId, channel: .email,
                status: .sent, attempts: 1, provider: .email, providerId: "email-42"),
        ].enumerated().map { (.sender(.receipt($1)), t0 + .seconds(Int64(20 + $0))) }, to: Topics.receipts)

        do {
            let timeline = try await Explainer.explain(user: Self.user, window: .all, profile: Self.profile, reader: reader)
            let trail = try #require(timeline.sends)
            #expect(trail.sends(of: sent).attempts.map(\.attempt.id) == [a1.id, a2.id], "one trace per attempt id, copies dropped")
            #expect(trail.sends(of: sent).attempts.map { $0.result?.outcome } == [.retryable, .accepted])
            #expect(trail.sends(of: sent).progress == .final)
            #expect(trail.sends(of: fellBack).receipts.map(\.receipt.status) == [.fellBack, .sent])
            #expect(trail.sends(of: fellBack).progress == .final)
            #expect(trail.sends(of: retrying).progress == .inProgress)
            #expect(trail.sends(of: retrying).attempts.last?.result == nil)

            let text = TimelineRendering.text(timeline)
            #expect(!text.contains("apns-token-") && !text.contains("@example.test"), "device tokens and addresses are not printed")
            try expectInOrder(text, [
                "delivered as \(sent.notificationId)",
                "send: attempt 1 apns device phone at 2026-11-21T13:00:00Z: retryable 503 ServiceUnavailable, retry after 30 s (answered at 2026-11-21T13:00:10Z)",
                "send: attempt 2 apns device phone at 2026-11-21T13:00:01Z: accepted 200, provider id apns-7f3c",
                "send: receipt push: sent via apns, provider id apns-7f3c, 2 attempts, at 2026-11-21T13:00:20Z",
                "delivered as \(fellBack.notificationId)",
                "send: attempt 1 apns device phone at 2026-11-21T13:00:02Z: invalid_token 410 Unregistered",
                "send: attempt 1 email device mail",
                "send: receipt push: fell_back (Unregistered) via apns, 1 attempt",
                "send: receipt email: sent via email, provider id email-42, 1 attempt",
                "delivered as \(retrying.notificationId)",
                "send: attempt 1 fcm device pixel at 2026-11-21T13:00:04Z: retryable (no HTTP answer) timeout",
                "send: attempt 2 fcm device pixel at 2026-11-21T13:00:06Z: no answer recorded yet",
                "send: no receipt yet: waiting for the answer to attempt 2 (fcm pixel)",
            ])

            let document = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(TimelineRendering.json(timeline).utf8)).objectValue)
            #expect(document["sender_missing_topics"]?.arrayValue?.isEmpty == true)
            let links = (document["intents"]?.arrayValue ?? []).flatMap { $0["links"]?.arrayValue ?? [] }
            let progress = links.compactMap { $0["sends"]?["progress"]?.stringValue }
            #expect(progress == ["final", "final", "in_progress"])
            let first = try #require(links.first { $0["sends"]?["progress"] != nil }?["sends"])
            #expect(first["attempts"]?.arrayValue?.map { $0["result"]?["outcome"]?.stringValue } == ["retryable", "accepted"])
            #expect(first["receipts"]?.arrayValue?.first?["receipt"]?["provider_id"]?.stringValue == "apns-7f3c")

            // With --since the sender's topics are sought like the outputs; the deliveries the
            // window still shows keep the same sends, the others are not kept.
            let later = try await Explainer.explain(
                user: Self.user, window: TimeWindow(since: .at("2026-11-21T10:30:00Z")), profile: Self.profile, reader: reader)
            let laterTrail = try #require(later.sends)
            #expect(!later.deliveryIds.contains(sent.id), "b1 was decided at 10:00, before the window")
            #expect(!later.deliveryIds.isEmpty && Set(laterTrail.deliveries.keys) == later.deliveryIds)
            for id in later.deliveryIds { #expect(laterTrail.deliveries[id] == trail.deliveries[id]) }
        }
    }

    /// The user's deliveries as explain reads them, in chain order.
    private func deliveredInOrder(reader: FleetTopicReader) async throws -> [Delivery] {
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            let timeline = try await Explainer.explain(user: Self.user, window: .all, profile: Self.profile, reader: reader)
            let deliveries = timeline.chains.flatMap(\.links).compactMap(\.delivery)
            if deliveries.count >= 3 || ContinuousClock.now > deadline { return deliveries }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    private func attempt(_ delivery: Delivery, try number: Int, provider: SendProvider, device: String = "phone") -> SendAttempt {
        let token = provider == .email ? "maya@example.test" : "apns-token-\(device)"
        return SendAttempt(
            id: "\(delivery.id)~\(device)~\(number)", userId: Self.user, deliveryId: delivery.id, notificationId: delivery.notificationId,
            attempt: number, provider: provider, deviceId: device, token: token, app: provider == .email ? "" : "com.fitcircle.app",
            notification: delivery.notification, category: delivery.category, title: delivery.title, body: delivery.body,
            deepLink: delivery.deepLink, expiresAt: .at("2026-11-22T13:00:00Z"))
    }

    private func result(
        _ attempt: SendAttempt, _ outcome: SendOutcome, status: Int? = nil, reason: String? = nil, providerId: String? = nil,
        retryAfterMs: Int64? = nil
    ) -> SendResult {
        SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: attempt.provider, outcome: outcome, status: status, reason: reason, providerId: providerId,
            retryAfterMs: retryAfterMs)
    }
}
