import FleetModel
@testable import FleetOperations
import Testing

/// What `fleetctl explain` makes of the sender's records for a delivery (issue 17 "Receipts"),
/// without a broker: which copies count, when a delivery's sends are final, and the lines said
/// when they are not.
@Suite struct SendTrailTests {
    static let delivery = Delivery(
        id: "d1", userId: "u1", notificationId: "n1", channel: .push, notification: "score.updated", category: "SCORE",
        title: "Your score rose", body: "From 50 to 58", deepLink: "fitcircle://score", mergedIntents: ["i1"])

    static func attempt(_ number: Int, delivery: String = "d1", provider: SendProvider = .apns) -> SendAttempt {
        SendAttempt(
            id: "\(delivery)~phone~\(number)", userId: "u1", deliveryId: delivery, notificationId: "n1", attempt: number,
            provider: provider, deviceId: "phone", token: "secret-device-token", app: "com.fitcircle.app", notification: "score.updated",
            category: "SCORE", title: "t", body: "b", deepLink: "", expiresAt: .at("2026-11-22T00:00:00Z"))
    }

    static func result(_ attempt: SendAttempt, _ outcome: SendOutcome, reason: String? = nil) -> SendResult {
        SendResult(
            userId: "u1", attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId, provider: attempt.provider,
            outcome: outcome, status: outcome == .accepted ? 200 : 503, reason: reason, providerId: outcome == .accepted ? "p-1" : nil)
    }

    static func receipt(_ channel: DeliveryChannel, _ status: ReceiptStatus, id: String) -> Receipt {
        Receipt(id: id, userId: "u1", deliveryId: "d1", notificationId: "n1", channel: channel, status: status, attempts: 1)
    }

    @Test func copiesWrittenAgainAfterACrashCountOnceAndOtherDeliveriesAreDropped() {
        var collector = SenderLog.Collector(deliveryIds: ["d1"])
        let first = Self.attempt(1), second = Self.attempt(2)
        collector.add(.attempt(first), at: .at("2026-11-21T10:00:00Z"))
        collector.add(.result(Self.result(first, .retryable, reason: "ServiceUnavailable")), at: .at("2026-11-21T10:00:01Z"))
        collector.add(.attempt(first), at: .at("2026-11-21T10:00:05Z"))
        collector.add(.result(Self.result(first, .accepted)), at: .at("2026-11-21T10:00:06Z"))
        collector.add(.attempt(second), at: .at("2026-11-21T10:01:00Z"))
        collector.add(.attempt(Self.attempt(1, delivery: "d2")), at: .at("2026-11-21T10:00:00Z"))
        collector.add(.receipt(Self.receipt(.push, .sent, id: "r1")), at: .at("2026-11-21T10:02:00Z"))
        collector.add(.receipt(Self.receipt(.push, .failed, id: "r1-again")), at: .at("2026-11-21T10:03:00Z"))

        let sends = collector.deliveries
        #expect(Set(sends.keys) == ["d1"])
        let d1 = sends["d1"]
        #expect(d1?.attempts.map(\.attempt.id) == [first.id, second.id])
        #expect(d1?.attempts.first?.at == .at("2026-11-21T10:00:00Z"))
        #expect(d1?.attempts.first?.result?.outcome == .retryable, "the first answer written is the one the fold read")
        #expect(d1?.attempts.last?.result == nil)
        #expect(d1?.receipts.map(\.receipt.id) == ["r1"], "one receipt per channel")
    }

    @Test func aDeliveryIsFinalOnceAReceiptOtherThanFellBackIsWritten() {
        let attempted = AttemptTrace(attempt: Self.attempt(1), at: nil)
        #expect(DeliverySends().progress == .notTaken)
        #expect(DeliverySends(attempts: [attempted]).progress == .inProgress)
        let fellBack = ReceiptTrace(receipt: Self.receipt(.push, .fellBack, id: "r1"), at: nil)
        #expect(DeliverySends(attempts: [attempted], receipts: [fellBack]).progress == .inProgress, "the email channel's receipt is still to come")
        for status in ReceiptStatus.allCases where status != .fellBack {
            #expect(DeliverySends(receipts: [ReceiptTrace(receipt: Self.receipt(.push, status, id: "r"), at: nil)]).progress == .final)
        }
    }

    @Test func withoutAFinalReceiptTheLastLineSaysWhy() {
        let indent = "send: "
        let noSender = SendTrail(missingTopics: SendTrail.topics)
        #expect(TimelineRendering.sendLines(noSender, Self.delivery, indent: indent) == ["send: no receipt: no sender in this fleet"])
        #expect(TimelineRendering.sendLines(SendTrail(), Self.delivery, indent: indent).last?.contains("has not taken this delivery") == true)

        let first = Self.attempt(1)
        let waiting = SendTrail(deliveries: ["d1": DeliverySends(attempts: [AttemptTrace(attempt: first, at: nil)])])
        #expect(TimelineRendering.sendLines(waiting, Self.delivery, indent: indent).last == "send: no receipt yet: waiting for the answer to attempt 1 (apns phone)")
        let answered = SendTrail(deliveries: ["d1": DeliverySends(attempts: [
            AttemptTrace(attempt: first, at: nil, result: Self.result(first, .retryable, reason: "ServiceUnavailable")),
        ])])
        let lines = TimelineRendering.sendLines(answered, Self.delivery, indent: indent)
        #expect(lines == ["send: attempt 1 apns device phone: retryable 503 ServiceUnavailable", "send: no receipt yet: the sender is still retrying"])
        #expect(!lines.joined().contains("secret-device-token"), "device tokens are not printed")
    }
}
