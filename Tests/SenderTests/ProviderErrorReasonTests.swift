import NIOCore
@testable import ProviderClients
import Testing

/// What a send result's `reason` says for a call that got no answer: the error's kind, never
/// its text (an error can quote the request's URL, and an APNs URL holds the device token).
struct ProviderErrorReasonTests {
    /// An error whose text holds what must not reach a record or a log.
    struct QuotingError: Error, CustomStringConvertible {
        var description: String { "GET https://api.push.apple.com/3/device/secret-device-token failed" }
    }

    @Test func knownKindsAreNamedByTheirMeaning() {
        #expect(ProviderEffect.describe(ChannelError.connectTimeout(.seconds(1))) == "timeout")
        #expect(ProviderEffect.describe(CancellationError()) == "cancelled")
        #expect(ProviderEffect.describe(HTTP2CallError.tls) == HTTP2CallError.tls.description)
    }

    /// An unlisted kind is named by its type, so an operator (or a failing test) can tell an
    /// `IOError` from a `NIOConnectionError`, and nothing of its text is carried.
    @Test func otherErrorsAreNamedByTheirTypeOnly() {
        let reason = ProviderEffect.describe(QuotingError())
        #expect(reason == "connection error (QuotingError)")
        #expect(!reason.contains("secret-device-token"))
        #expect(ProviderEffect.describe(IOError(errnoCode: 104, reason: "read")) == "connection error (IOError)")
    }
}
