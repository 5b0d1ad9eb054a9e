import FleetModel
import Foundation
@testable import ProviderClients
import SenderTestSupport
import Testing

/// Issue 17, duplicate on timeout: the email `Idempotency-Key` is one per delivery and
/// address, so a retry of a call the provider accepted but answered too late is answered with
/// the first email, not sent again; and the stand-in honours keys as Resend does.
@Suite struct EmailIdempotencyTests {
    @Test func everyTryOfADeliveryToAnAddressCarriesTheSameKey() {
        let key = AttemptIdentity.emailIdempotencyKey(deliveryId: "d1", deviceId: "mail", address: "alex@example.com")
        // Pinned: a key that changed between versions would let a retry across an upgrade send twice.
        // SHA-256 of "d1\0mail\0alex@example.com", as `hashlib.sha256` gives it.
        #expect(key == "email-ffa1aac15ed12bb8e859aca15a3d608edc3ab40cb66ace392188b2a31f58f04e")
        #expect(key.count == 70 && !key.contains("alex"), "Resend takes 256 characters; the address cannot be read from the key")
        let others = [
            AttemptIdentity.emailIdempotencyKey(deliveryId: "d2", deviceId: "mail", address: "alex@example.com"),
            AttemptIdentity.emailIdempotencyKey(deliveryId: "d1", deviceId: "work", address: "alex@example.com"),
            AttemptIdentity.emailIdempotencyKey(deliveryId: "d1", deviceId: "mail", address: "alex@example.org"),
            // The separator keeps "d1"+"mail" apart from "d1m"+"ail".
            AttemptIdentity.emailIdempotencyKey(deliveryId: "d1m", deviceId: "ail", address: "alex@example.com"),
        ]
        #expect(Set(others + [key]).count == 5)
    }

    /// The client sends that key whatever the attempt number: two tries of one delivery, one email.
    @Test func aSecondTryOfADeliveryIsAnsweredWithTheFirstEmail() async throws {
        try await ProviderFakes.with { fakes in
            let first = await fakes.effect.perform(ProviderClientTests.attempt(.email, token: "alex@example.com", id: "d1~email~mail~1"))
            let second = await fakes.effect.perform(ProviderClientTests.attempt(.email, token: "alex@example.com", id: "d1~email~mail~2"))
            #expect(first.outcome == .accepted && second.outcome == .accepted)
            #expect(second.providerId == first.providerId && fakes.email.sent.count == 1 && fakes.email.requests == 2)
            let other = await fakes.effect.perform(ProviderClientTests.attempt(.email, token: "sam@example.com", id: "d1~email~mail~3"))
            #expect(other.outcome == .accepted && other.providerId != first.providerId && fakes.email.sent.count == 2,
                    "a new address under the same registration is a new email")
        }
    }

    /// The stand-in as Resend: a key is remembered 24 hours after its email, a refused call
    /// leaves it free.
    @Test func theStandInRemembersAKeyForADay() {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_790_000_000))
        let email = FakeEmailAPI(now: clock.read)
        func post(_ key: String) -> FakeResponse {
            let body: [String: Any] = [
                "from": "FitCircle <r@fitcircle.test>", "to": ["alex@example.com"], "subject": "s", "text": "t",
                "headers": ["List-Unsubscribe": "<https://u>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"],
            ]
            return email.respond(FakeRequest(
                method: "POST", path: "/emails",
                headers: ["authorization": "Bearer " + email.apiKey, "idempotency-key": key],
                body: (try? JSONSerialization.data(withJSONObject: body)) ?? Data()))
        }
        email.script("alex@example.com", [.serverError])
        #expect(post("k1").status == 500 && email.sent.isEmpty)
        let first = post("k1")
        #expect(first.status == 200 && email.sent.count == 1, "a refused call left its key free")
        clock.advance(by: 24 * 3600 - 1)
        #expect(post("k1").body == first.body && email.sent.count == 1)
        clock.advance(by: 1)
        #expect(post("k1").body != first.body && email.sent.count == 2, "after 24 hours the key is new again")
    }
}
