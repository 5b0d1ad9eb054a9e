public import FleetModel

/// How the sender retries, gives up and falls back. The defaults are seed 002's ("retry failed
/// sends 3× with exponential backoff"; email for the types the email preferences list).
public struct SenderPolicy: Hashable, Sendable {
    /// Tries per device (or address), the first included: after this many retryable answers
    /// the device's try is failed for good. A provider outage (no answer, 503) does not count:
    /// those attempts go on, backing off, until `maximumAge`.
    public var maximumTries: Int
    /// A delivery not through by `arrival + maximumAge` is given up as `expired`; it is also
    /// what the providers are told (`apns-expiration`, FCM `ttl`).
    public var maximumAge: TimeSpan
    /// The first retry waits about this long (between half and all of it, `Backoff`); each
    /// further one twice as long, up to `maximumBackoff`.
    public var baseBackoff: TimeSpan
    public var maximumBackoff: TimeSpan
    /// How long an attempt may wait for its answer past the delivery's maximum age before it
    /// is given up as `expired` (an effect stage that lost its answer must not hold a delivery
    /// for ever).
    public var answerGrace: TimeSpan
    /// How long a finished delivery's id is remembered, so later copies of it on
    /// `rin.notify.deliveries` (at-least-once after a crash) are not sent again.
    public var deduplicationWindow: TimeSpan
    /// Notification types that may go by email when push does not get through.
    public var emailFallbackTypes: Set<String>
    /// At most this many deliveries in progress per user; more are refused (dead-lettered),
    /// so no producer can grow a state without bound (`RecordLimits`, principle 7).
    public var maximumDeliveriesInProgress: Int
    /// At most this many registered devices (and addresses) per user.
    public var maximumDevices: Int

    public init(
        maximumTries: Int = 3, maximumAge: TimeSpan = .hours(24), baseBackoff: TimeSpan = .seconds(30),
        maximumBackoff: TimeSpan = .minutes(30), answerGrace: TimeSpan = .minutes(10), deduplicationWindow: TimeSpan = .days(7),
        emailFallbackTypes: Set<String> = SenderPolicy.seedEmailTypes, maximumDeliveriesInProgress: Int = 256,
        maximumDevices: Int = 32
    ) {
        self.maximumTries = maximumTries; self.maximumAge = maximumAge; self.baseBackoff = baseBackoff
        self.maximumBackoff = maximumBackoff; self.answerGrace = answerGrace; self.deduplicationWindow = deduplicationWindow
        self.emailFallbackTypes = emailFallbackTypes; self.maximumDeliveriesInProgress = maximumDeliveriesInProgress
        self.maximumDevices = maximumDevices
    }

    /// Seed 002 "Feature 7", email types: daily check-in, streak at risk, weekly digest,
    /// challenge milestone (the FitCircle catalog's names), the weekly digest and the
    /// retention summaries.
    public static let seedEmailTypes: Set<String> = [
        "fitcircle.daily_checkin", "fitcircle.streak_at_risk", "fitcircle.weekly_digest", "fitcircle.challenge_milestone",
        "digest.weekly", "retention.lapsed_summary", "retention.value_reminder",
    ]
}
