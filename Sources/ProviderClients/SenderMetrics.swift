public import CoreMetrics
import FleetModel

/// What the sender's effect stage exports (issue 17, "Operations"): attempts by provider and
/// outcome, the providers' latency, and the answers operators alert on. Names follow the
/// fleet's (`MetricNames`): `_total` counters, seconds histograms.
public final class SenderMetrics: Sendable {
    public enum Names {
        /// Counter. Provider calls answered, by `provider` (`apns`, `fcm`, `email`) and
        /// `outcome` (`accepted`, `invalid_token`, `rejected`, `retryable`,
        /// `credentials_expired`). `outcome="invalid_token"` counts invalidations;
        /// `outcome="retryable"`, retries to come.
        public static let attempts = "sender_attempts_total"
        /// Histogram (seconds). One provider call, TLS and HTTP/2 included, by `provider`.
        public static let providerLatency = "sender_provider_latency_seconds"
        /// Counter. Calls that got no HTTP answer (connection error, timeout), by `provider`.
        public static let noAnswer = "sender_provider_unanswered_total"
        /// Counter. Authentication refused (APNs 403, FCM 401, email 401/403, a token
        /// endpoint's refusal), by `provider`: the "APNs auth failing" runbook's signal.
        public static let authFailures = "sender_auth_failures_total"
    }

    private let factory: any MetricsFactory

    public init(factory: any MetricsFactory) { self.factory = factory }

    func record(_ result: SendResult, seconds: Double) {
        let provider = result.provider.rawValue
        Counter(label: Names.attempts, dimensions: [("provider", provider), ("outcome", result.outcome.rawValue)], factory: factory)
            .increment()
        Timer(label: Names.providerLatency, dimensions: [("provider", provider)], factory: factory)
            .recordNanoseconds(Int64(seconds * 1_000_000_000))
        if result.status == nil {
            Counter(label: Names.noAnswer, dimensions: [("provider", provider)], factory: factory).increment()
        }
        if result.status == 401 || result.status == 403 || result.outcome == .credentialsExpired
            || result.reason?.hasPrefix("oauth2:") == true
        {
            Counter(label: Names.authFailures, dimensions: [("provider", provider)], factory: factory).increment()
        }
    }
}
