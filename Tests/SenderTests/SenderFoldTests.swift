import FleetModel
import SenderCore
import Testing

/// The sender's decisions, one scenario each (issue 17: retries, invalidation, fallback,
/// receipts; seed 002 "Retry failed sends 3× with exponential backoff").
@Suite struct SenderFoldTests {
    typealias H = SenderHarness

    @Test func anAcceptedPushGivesOneAttemptAndASentReceipt() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        #expect(h.attempts.count == 1)
        let attempt = h.attempts[0]
        #expect(attempt.id == "d1~push~phone~1")
        #expect(attempt.provider == .apns && attempt.token == "tok-phone" && attempt.app == "com.fitcircle.app")
        #expect(attempt.expiresAt == H.start + .hours(24))
        #expect(h.receipts.isEmpty)
        h.answer(attempt, .accepted)
        #expect(h.receipts.count == 1)
        #expect(h.receipts[0].status == .sent && h.receipts[0].providerId == "pid-d1~push~phone~1" && h.receipts[0].attempts == 1)
        #expect(h.receipts[0].channel == .push && h.receipts[0].provider == .apns)
        #expect(h.state.deliveries.isEmpty && h.state.finished["d1"] == H.start)
    }

    @Test func aRetryableAnswerIsRetriedAfterABackoffThenSucceeds() {
        var h = H()
        h.apply(H.device("phone", .android))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .retryable, status: 503, reason: "UNAVAILABLE")
        #expect(h.attempts.count == 1)
        // The first retry waits between half and all of the 30 s base.
        h.advance(by: .seconds(14))
        #expect(h.attempts.count == 1)
        h.advance(by: .seconds(16))
        #expect(h.attempts.count == 2)
        #expect(h.attempts[1].id == "d1~push~phone~2" && h.attempts[1].attempt == 2)
        h.answer(h.attempts[1], .accepted)
        #expect(h.receipts.map(\.status) == [.sent])
        #expect(h.receipts[0].attempts == 2)
    }

    @Test func retriesStopAfterThePolicysTriesWithAFailedReceipt() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        for _ in 0..<3 {
            let last = h.attempts[h.attempts.count - 1]
            h.answer(last, .retryable, status: 500, reason: "InternalServerError")
            h.advance(by: .minutes(30))
        }
        #expect(h.attempts.map(\.attempt) == [1, 2, 3])
        #expect(h.receipts.count == 1)
        #expect(h.receipts[0].status == .failed && h.receipts[0].attempts == 3)
        #expect(h.receipts[0].reason == "gave up after 3 tries: InternalServerError")
        h.advance(by: .hours(2))
        #expect(h.attempts.count == 3)
    }

    @Test func aProviderOutageDoesNotUseUpTheTriesAndTheDeliveryGoesOutAfterIt() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        // Thirty minutes without an answer, then twenty of 503s: six tries, none counted (the
        // backoff grows: at most 30 s, 1, 2, 4, 8 min, so each 10-minute step brings the next).
        for step in 0..<5 {
            let last = h.attempts[h.attempts.count - 1]
            h.answer(last, .retryable, status: step < 3 ? nil : 503, reason: step < 3 ? "connection error" : "ServiceUnavailable")
            h.advance(by: .minutes(10))
        }
        #expect(h.receipts.isEmpty && h.attempts.count == 6)
        h.answer(h.attempts[h.attempts.count - 1], .accepted)
        #expect(h.receipts.map(\.status) == [.sent])
    }

    @Test func retryAfterIsHonouredAndA429BacksOffTheWholeDevice() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .retryable, status: 429, reason: "TooManyRequests", retryAfterMs: 600_000)
        #expect(h.state.devices["phone"]?.backoffUntil == H.start + .minutes(10))
        // Another delivery to the same device waits for the device's backoff too.
        h.apply(H.delivery("d2"))
        #expect(h.attempts.count == 1)
        h.advance(by: .minutes(9))
        #expect(h.attempts.count == 1)
        h.advance(by: .minutes(1))
        #expect(Set(h.attempts.dropFirst().map(\.id)) == ["d1~push~phone~2", "d2~push~phone~1"])
    }

    @Test func aDeadTokenIsInvalidatedAndNeverTriedAgain() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .invalidToken, status: 410, reason: "Unregistered")
        #expect(h.invalidations.count == 1)
        #expect(h.invalidations[0].deviceId == "phone" && h.invalidations[0].reason == "Unregistered")
        #expect(h.invalidations[0].attemptId == "d1~push~phone~1" && h.invalidations[0].registrationId == "reg-phone-tok-phone")
        #expect(h.outputs.first { if case .sender(.deviceInvalidated) = $0.record { true } else { false } }?.topic == Topics.devices)
        #expect(h.receipts.map(\.status) == [.tokenInvalid])
        // The invalidation read back from rin.devices, the same token registered again, and a
        // later delivery: nothing goes to the dead token.
        h.apply(.sender(.deviceInvalidated(h.invalidations[0])))
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d2"))
        #expect(h.attempts.count == 1)
        #expect(h.receipts.last?.status == .skipped && h.receipts.last?.reason == "no_device")
        // A new token brings the device back.
        h.apply(H.device("phone", .ios, token: "fresh"))
        h.apply(H.delivery("d3"))
        #expect(h.attempts.last?.token == "fresh")
    }

    @Test func anInvalidationForAnOlderRegistrationLeavesTheNewTokenAlone() {
        var h = H()
        h.apply(H.device("phone", .ios, token: "new"))
        h.apply(.sender(.deviceInvalidated(DeviceInvalidated(
            id: "x", userId: H.user, deviceId: "phone", reason: "Unregistered", attemptId: "a", registrationId: "reg-phone-old"))))
        #expect(h.state.devices["phone"]?.isActive == true)
    }

    @Test func everyActiveDeviceIsTriedAndOneAcceptanceMakesItSent() {
        var h = H()
        h.apply(H.device("ipad", .ios))
        h.apply(H.device("pixel", .android))
        h.apply(H.device("mail", .email))
        h.apply(H.delivery("d1"))
        #expect(h.attempts.map(\.id) == ["d1~push~ipad~1", "d1~push~pixel~1"])
        #expect(h.attempts.map(\.provider) == [.apns, .fcm])
        h.answer(h.attempts[0], .invalidToken, status: 400, reason: "BadDeviceToken")
        #expect(h.receipts.isEmpty)
        h.answer(h.attempts[1], .accepted)
        #expect(h.receipts.count == 1)
        #expect(h.receipts[0].status == .sent && h.receipts[0].provider == .fcm && h.receipts[0].attempts == 2)
        #expect(h.invalidations.map(\.deviceId) == ["ipad"])
    }

    @Test func aPushWithNoDeviceFallsBackToEmailWhenTheUserOptedInAndTheTypeAllowsIt() {
        var h = H()
        h.apply(H.settings(emailOptIn: true))
        h.apply(H.device("mail", .email))
        h.apply(H.delivery("d1"))
        #expect(h.receipts.map(\.status) == [.fellBack])
        #expect(h.receipts[0].channel == .push && h.receipts[0].reason == "no_device")
        #expect(h.attempts.map(\.provider) == [.email])
        #expect(h.attempts[0].token == "mail@example.com" && h.attempts[0].id == "d1~email~mail~1")
        h.answer(h.attempts[0], .accepted)
        #expect(h.receipts.map(\.channel) == [.push, .email])
        #expect(h.receipts[1].status == .sent)
    }

    @Test func noFallbackWithoutOptInOrForATypeEmailDoesNotCarry() {
        var notOptedIn = H()
        notOptedIn.apply(H.device("mail", .email))
        notOptedIn.apply(H.delivery("d1"))
        #expect(notOptedIn.receipts.map(\.status) == [.skipped] && notOptedIn.attempts.isEmpty)

        var pushOnlyType = H()
        pushOnlyType.apply(H.settings(emailOptIn: true))
        pushOnlyType.apply(H.device("mail", .email))
        pushOnlyType.apply(H.delivery("d1", notification: "fitcircle.leaderboard_change"))
        #expect(pushOnlyType.receipts.map(\.status) == [.skipped] && pushOnlyType.attempts.isEmpty)
    }

    @Test func whenEveryDeviceFailsOrIsInvalidatedThePushFallsBackOnce() {
        var h = H()
        h.apply(H.settings(emailOptIn: true))
        h.apply(H.device("mail", .email))
        h.apply(H.device("ipad", .ios))
        h.apply(H.device("pixel", .android))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .invalidToken, status: 410, reason: "Unregistered")
        h.answer(h.attempts[1], .rejected, status: 400, reason: "INVALID_ARGUMENT")
        #expect(h.receipts.map(\.status) == [.fellBack])
        #expect(h.receipts[0].reason == "failed: INVALID_ARGUMENT")
        let email = h.attempts[2]
        #expect(email.provider == .email)
        h.answer(email, .retryable, status: 503)
        h.advance(by: .minutes(1))
        h.answer(h.attempts[3], .rejected, status: 422, reason: "validation_error")
        #expect(h.receipts.map(\.status) == [.fellBack, .failed])
        #expect(h.receipts[1].channel == .email && h.receipts[1].reason == "validation_error")
        #expect(h.attempts.filter { $0.provider == .email }.count == 2)
    }

    @Test func emailDeliveriesGoStraightToEmailUnlessUnsubscribed() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.device("mail", .email))
        h.apply(H.delivery("d1", channel: .email))
        #expect(h.attempts.map(\.provider) == [.email])
        h.apply(H.settings(emailOptIn: false))
        h.apply(H.delivery("d2", channel: .email))
        #expect(h.receipts.last?.status == .skipped && h.receipts.last?.reason == "unsubscribed" && h.receipts.last?.channel == .email)
        #expect(h.attempts.count == 1)
    }

    @Test func pushDisabledIsSkippedWithItsReason() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.settings(pushEnabled: false))
        h.apply(H.delivery("d1"))
        #expect(h.attempts.isEmpty)
        #expect(h.receipts.map(\.reason) == ["push_disabled"])
    }

    @Test func copiesOfADeliveryAreSentOnce() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.apply(H.delivery("d1"))
        #expect(h.attempts.count == 1)
        h.answer(h.attempts[0], .accepted)
        h.apply(H.delivery("d1"))
        h.advance(by: .days(3))
        h.apply(H.delivery("d1"))
        #expect(h.attempts.count == 1 && h.receipts.count == 1)
        // Remembered for the deduplication window, then forgotten (the state stays bounded).
        h.advance(by: .days(5))
        #expect(h.state.finished.isEmpty)
    }

    @Test func aRepeatedAnswerChangesNothing() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        let attempt = h.attempts[0]
        h.answer(attempt, .retryable, status: 503)
        let state = h.state
        #expect(h.answer(attempt, .retryable, status: 503).isEmpty)
        #expect(h.answer(attempt, .accepted).isEmpty)
        #expect(h.state == state)
    }

    @Test func aPayloadOverTheProviderLimitIsRefusedBeforeSending() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1", body: String(repeating: "x", count: 5000)))
        #expect(h.attempts.isEmpty)
        #expect(h.receipts.count == 1 && h.receipts[0].status == .failed && h.receipts[0].attempts == 0)
        #expect(h.receipts[0].reason?.hasPrefix("payload of ") == true)
        #expect(h.receipts[0].reason?.hasSuffix("bytes is over the apns limit of 4096 bytes") == true)
    }

    @Test func anExpiredProviderTokenIsRenewedAndRetriedOnce() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .credentialsExpired, status: 403, reason: "ExpiredProviderToken")
        #expect(h.attempts.count == 2)
        #expect(h.attempts[1].refreshCredentials && !h.attempts[0].refreshCredentials)
        h.answer(h.attempts[1], .credentialsExpired, status: 403, reason: "ExpiredProviderToken")
        #expect(h.attempts.count == 2)
        #expect(h.receipts.map(\.status) == [.failed])
        #expect(h.receipts[0].reason == "ExpiredProviderToken again after renewing the provider token")
    }

    @Test func aRetryPastTheMaximumAgeExpires() {
        var h = H(policy: SenderPolicy(maximumAge: .minutes(5)))
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .retryable, status: 503, retryAfterMs: 600_000)
        #expect(h.receipts.map(\.status) == [.expired])
        #expect(h.receipts[0].reason == "maximum age reached after 1 tries: status 503")
    }

    @Test func anAnswerThatNeverComesExpiresTheDelivery() {
        var h = H(policy: SenderPolicy(maximumAge: .minutes(5), answerGrace: .minutes(1)))
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.advance(by: .minutes(5))
        #expect(h.receipts.isEmpty)
        h.advance(by: .minutes(1))
        #expect(h.receipts.map(\.status) == [.expired])
    }

    @Test func unregisteringADeviceEndsItsWaitingTries() {
        var h = H()
        h.apply(H.device("phone", .ios))
        h.apply(H.delivery("d1"))
        h.answer(h.attempts[0], .retryable, status: 503)
        h.apply(H.unregister("phone"))
        #expect(h.receipts.map(\.status) == [.failed] && h.receipts[0].reason == "device unregistered")
        h.advance(by: .hours(1))
        #expect(h.attempts.count == 1)
    }

    @Test func recordsThatWouldGrowTheStateWithoutBoundAreRefused() {
        var h = H(policy: SenderPolicy(maximumDeliveriesInProgress: 2, maximumDevices: 1))
        h.apply(H.device("phone", .ios))
        h.apply(H.device("other", .android))
        #expect(h.deadLetters.map(\.message) == ["user has 1 devices, the most the sender holds (1)"])
        h.apply(H.delivery("d1"))
        h.apply(H.delivery("d2"))
        h.apply(H.delivery("d3"))
        #expect(h.deadLetters.count == 2)
        #expect(h.deadLetters[1].message == "user has 2 deliveries in progress, the most the sender holds (2)")
        #expect(h.attempts.count == 2)
        // A copy of one in progress is not refused: it is a no-op.
        h.apply(H.delivery("d1"))
        #expect(h.deadLetters.count == 2)
    }

    @Test func recordsThatDoNotBelongInTheInboxAreRefused() {
        var h = H()
        h.apply(.sender(.receipt(Receipt(
            id: "r", userId: H.user, deliveryId: "d", notificationId: "n", channel: .push, status: .sent, attempts: 1))))
        #expect(h.deadLetters.map(\.message) == ["type 'receipt' does not belong on topic 'rin.sender.inbox'"])
    }
}
