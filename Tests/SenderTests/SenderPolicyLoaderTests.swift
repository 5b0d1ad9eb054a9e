import FleetModel
import SenderCore
import Testing

/// The profile's `sender:` section (P-PROF-1: one profile configures the fleet, so a replay
/// rebuilds the sender as it ran).
struct SenderPolicyLoaderTests {
    @Test("no sender section: the seed's defaults (3 tries, 24 h, 30 s doubling to 30 min)")
    func defaults() throws {
        #expect(try SenderPolicy.load(profileYAML: "name: x\n") == SenderPolicy())
        #expect(try SenderPolicy.load(profileYAML: "") == SenderPolicy())
        #expect(SenderPolicy().maximumTries == 3)
    }

    @Test("every field is read")
    func fields() throws {
        let policy = try SenderPolicy.load(profileYAML: """
            name: x
            sender:
              max_tries: 5
              max_age_minutes: 90
              base_backoff_ms: 250
              max_backoff_ms: 4000
              answer_grace_seconds: 30
              email_fallback_types: [digest.weekly, fitcircle.daily_checkin]
            """)
        #expect(policy.maximumTries == 5)
        #expect(policy.maximumAge == .minutes(90))
        #expect(policy.baseBackoff == TimeSpan(milliseconds: 250))
        #expect(policy.maximumBackoff == .seconds(4))
        #expect(policy.answerGrace == .seconds(30))
        #expect(policy.emailFallbackTypes == ["digest.weekly", "fitcircle.daily_checkin"])
    }

    @Test("a bad section is refused naming the field", arguments: [
        ("sender:\n  retries: 3\n", "sender.retries"),
        ("sender:\n  max_tries: 0\n", "sender.max_tries"),
        ("sender:\n  max_tries: three\n", "sender.max_tries"),
        ("sender:\n  base_backoff_ms: 5000\n  max_backoff_ms: 1000\n", "sender.max_backoff_ms"),
        ("sender:\n  email_fallback_types: digest.weekly\n", "sender.email_fallback_types"),
        ("sender: 3\n", "sender:"),
    ])
    func refusals(yaml: String, field: String) {
        #expect {
            try SenderPolicy.load(profileYAML: yaml)
        } throws: { error in
            "\(error)".contains(field)
        }
    }
}
