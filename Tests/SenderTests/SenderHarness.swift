import FleetModel
import SenderCore

/// Drives the sender's fold the way the runtime does (`PartitionFold` over the inbox, ticks to
/// let time pass) and collects what it emits.
struct SenderHarness {
    static let start = Timestamp(secondsSinceEpoch: 1_790_000_000)
    static let user = "u1"

    private(set) var fold: PartitionFold<SenderProcessor>
    private(set) var now = SenderHarness.start
    private(set) var offset: Int64 = 0
    private(set) var outputs: [OutputRecord] = []
    private(set) var deadLetters: [RecordError] = []

    init(policy: SenderPolicy = SenderPolicy()) { fold = PartitionFold(processor: SenderProcessor(policy: policy)) }

    var state: SenderState { fold.states[Self.user] ?? SenderState() }

    /// Folds `record` at the current time; returns what this step emitted.
    @discardableResult
    mutating func apply(_ record: FleetRecord) -> [OutputRecord] {
        let step = fold.apply(record, timestamp: now, coordinates: SourceCoordinates(topic: Topics.senderInbox, partition: 0, offset: offset))
        offset += 1
        if let error = step.deadLetter { deadLetters.append(error) }
        outputs += step.outputs
        return step.outputs
    }

    /// Lets `span` pass (a tick at the new time fires what came due).
    @discardableResult
    mutating func advance(by span: TimeSpan) -> [OutputRecord] {
        now = now + span
        return apply(.tick(Tick(id: "tick-\(offset)")))
    }

    var attempts: [SendAttempt] { Self.attempts(in: outputs) }
    var receipts: [Receipt] { outputs.compactMap { if case .sender(.receipt(let r)) = $0.record { r } else { nil } } }
    var invalidations: [DeviceInvalidated] {
        outputs.compactMap { if case .sender(.deviceInvalidated(let d)) = $0.record { d } else { nil } }
    }

    static func attempts(in outputs: [OutputRecord]) -> [SendAttempt] {
        outputs.compactMap { if case .sender(.attempt(let a)) = $0.record { a } else { nil } }
    }

    /// Answers `attempt` as the effect stage would.
    @discardableResult
    mutating func answer(
        _ attempt: SendAttempt, _ outcome: SendOutcome, status: Int? = nil, reason: String? = nil, retryAfterMs: Int64? = nil
    ) -> [OutputRecord] {
        apply(.sender(.result(SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: attempt.provider, outcome: outcome, status: status ?? (outcome == .accepted ? 200 : nil), reason: reason,
            providerId: outcome == .accepted ? "pid-\(attempt.id)" : nil, retryAfterMs: retryAfterMs))))
    }

    // MARK: Records

    static func delivery(
        _ id: String, channel: DeliveryChannel = .push, notification: String = "fitcircle.daily_checkin", body: String = "Keep your streak!"
    ) -> FleetRecord {
        .delivery(Delivery(
            id: id, userId: user, notificationId: "n-\(id)", channel: channel, notification: notification, category: "REMINDER",
            title: "Daily Check-in Reminder", body: body, deepLink: "fitcircle://checkin", mergedIntents: ["i-\(id)"]))
    }

    static func device(_ deviceId: String, _ platform: DevicePlatform, token: String? = nil, registration: String? = nil) -> FleetRecord {
        let app = platform == .ios ? "com.fitcircle.app" : platform == .android ? "fitcircle-prod" : ""
        let token = token ?? (platform == .email ? "\(deviceId)@example.com" : "tok-\(deviceId)")
        return .sender(.deviceRegistered(DeviceRegistered(
            id: registration ?? "reg-\(deviceId)-\(token)", userId: user, deviceId: deviceId, platform: platform, token: token, app: app)))
    }

    static func unregister(_ deviceId: String) -> FleetRecord {
        .sender(.deviceUnregistered(DeviceUnregistered(id: "unreg-\(deviceId)", userId: user, deviceId: deviceId)))
    }

    static func settings(pushEnabled: Bool? = nil, emailOptIn: Bool? = nil) -> FleetRecord {
        .settingsChanged(SettingsChanged(id: "s-\(String(describing: pushEnabled))-\(String(describing: emailOptIn))", userId: user, pushEnabled: pushEnabled, emailOptIn: emailOptIn))
    }
}
