import FleetModel
import SenderCore
import Testing

/// What each provider answer means (issue 17's table), the backoff, and the payloads.
@Suite struct ProviderRulesTests {
    @Test func apnsAnswers() {
        #expect(ProviderAnswers.apns(status: 200, reason: nil) == .accepted)
        #expect(ProviderAnswers.apns(status: 410, reason: "Unregistered") == .invalidToken)
        #expect(ProviderAnswers.apns(status: 400, reason: "BadDeviceToken") == .invalidToken)
        #expect(ProviderAnswers.apns(status: 400, reason: "DeviceTokenNotForTopic") == .invalidToken)
        #expect(ProviderAnswers.apns(status: 413, reason: "PayloadTooLarge") == .rejected)
        #expect(ProviderAnswers.apns(status: 400, reason: "BadCollapseId") == .rejected)
        #expect(ProviderAnswers.apns(status: 403, reason: "ExpiredProviderToken") == .credentialsExpired)
        #expect(ProviderAnswers.apns(status: 403, reason: "InvalidProviderToken") == .rejected)
        for status in [429, 500, 503] { #expect(ProviderAnswers.apns(status: status, reason: nil) == .retryable) }
    }

    @Test func fcmAnswers() {
        #expect(ProviderAnswers.fcm(status: 200, errorStatus: nil, errorCode: nil) == .accepted)
        #expect(ProviderAnswers.fcm(status: 404, errorStatus: "NOT_FOUND", errorCode: "UNREGISTERED") == .invalidToken)
        #expect(ProviderAnswers.fcm(status: 403, errorStatus: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH") == .invalidToken)
        #expect(ProviderAnswers.fcm(status: 400, errorStatus: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT") == .rejected)
        #expect(ProviderAnswers.fcm(status: 503, errorStatus: "UNAVAILABLE", errorCode: "UNAVAILABLE") == .retryable)
        #expect(ProviderAnswers.fcm(status: 500, errorStatus: "INTERNAL", errorCode: "INTERNAL") == .retryable)
        #expect(ProviderAnswers.fcm(status: 429, errorStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED") == .retryable)
        #expect(ProviderAnswers.fcm(status: 401, errorStatus: "UNAUTHENTICATED", errorCode: nil) == .credentialsExpired)
    }

    @Test func emailAnswers() {
        #expect(ProviderAnswers.email(status: 200, errorName: nil) == .accepted)
        #expect(ProviderAnswers.email(status: 422, errorName: "validation_error") == .rejected)
        #expect(ProviderAnswers.email(status: 409, errorName: "concurrent_idempotent_requests") == .retryable)
        #expect(ProviderAnswers.email(status: 409, errorName: "invalid_idempotent_request") == .rejected)
        #expect(ProviderAnswers.email(status: 429, errorName: "rate_limit_exceeded") == .retryable)
        #expect(ProviderAnswers.email(status: 503, errorName: nil) == .retryable)
        #expect(ProviderAnswers.noAnswer == .retryable)
    }

    @Test func retryAfterIsReadInSeconds() {
        #expect(ProviderAnswers.retryAfterMilliseconds("120") == 120_000)
        #expect(ProviderAnswers.retryAfterMilliseconds(" 5 ") == 5_000)
        #expect(ProviderAnswers.retryAfterMilliseconds("Wed, 21 Oct 2026 07:28:00 GMT") == nil)
        #expect(ProviderAnswers.retryAfterMilliseconds(nil) == nil)
    }

    @Test func backoffDoublesWithinItsJitterAndHonoursRetryAfter() {
        let base = TimeSpan.seconds(30), maximum = TimeSpan.minutes(30)
        for tries in 1...8 {
            let full = min(30_000 * Int64(1 << (tries - 1)), 1_800_000)
            for id in ["a", "b", "d1~push~phone~\(tries)", "x~y"] {
                let wait = Backoff.delay(afterTries: tries, attemptId: id, base: base, maximum: maximum).milliseconds
                #expect(wait >= full / 2 && wait < full, "tries \(tries) id \(id): \(wait)")
                #expect(Backoff.delay(afterTries: tries, attemptId: id, base: base, maximum: maximum).milliseconds == wait)
            }
        }
        let waits = Set((0..<50).map { Backoff.delay(afterTries: 1, attemptId: "d\($0)~push~p~1", base: base, maximum: maximum) })
        #expect(waits.count > 40, "jitter spreads retries of deliveries that failed together")
        #expect(Backoff.delay(afterTries: 1, attemptId: "a", base: base, maximum: maximum, retryAfter: .minutes(10)) == .minutes(10))
    }

    @Test func payloadsFollowSeed002AndAreMeasuredAsSent() {
        let content = MessageContent(
            deliveryId: "d1", notification: "fitcircle.daily_checkin", category: "REMINDER", title: "Daily Check-in Reminder",
            body: "Complete your check-in to keep your 14-day streak!", deepLink: "fitcircle://checkin")
        let apns = String(decoding: ProviderPayloads.apns(content), as: UTF8.self)
        #expect(apns == #"{"aps":{"alert":{"body":"Complete your check-in to keep your 14-day streak!","title":"Daily Check-in Reminder"},"sound":"default"},"data":{"deep_link":"fitcircle://checkin","delivery_id":"d1","type":"fitcircle.daily_checkin"}}"#)
        #expect(ProviderPayloads.size(of: content, for: .apns) == apns.utf8.count)
        #expect(ProviderPayloads.refusal(of: content, for: .apns) == nil)
        var big = content
        big.body = String(repeating: "é", count: 2100)
        #expect(ProviderPayloads.refusal(of: big, for: .apns) != nil)
        #expect(ProviderPayloads.refusal(of: big, for: .fcm) != nil)
        #expect(ProviderPayloads.refusal(of: big, for: .email) == nil)
    }
}
