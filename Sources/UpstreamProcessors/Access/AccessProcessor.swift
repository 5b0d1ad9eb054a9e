public import FleetModel

/// What the access worker remembers about one user: the recent request and alert ids, so a
/// repeat gives no second notification (P-ACC-1).
public struct AccessState: Codable, Hashable, Sendable {
    public var seen = RecentKeys()
    public init() {}
}

/// The access worker's decisions (POLICY.md P-ACC-1, §6.2 security alerts), folding
/// `rin.security.access-requests`.
///
/// - `access.requested` → `security.access_request` intent, then a `needs_attention` item
///   (`item_id` `access_request:{request_id}`). A `request_id` already seen gives nothing.
/// - `security.new_signin` / `security.suspicious_activity` → the intent of that name with
///   `detail`. The same record id twice gives one.
///
/// Memory per user is bounded by `AccessSettings.rememberedRequestIds` (256 in `rin`): a
/// repeat arriving after that many newer distinct requests and alerts would notify again.
/// SECURITY intents are never held back downstream, so nothing here delays them.
public struct AccessProcessor: UserProcessor {
    public let settings: AccessSettings

    public init(settings: AccessSettings = .rin) { self.settings = settings }

    public func initialState(userId: String) -> AccessState { AccessState() }

    public func process(_ record: FleetRecord, state: inout AccessState, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .accessRequested(let request):
            try request.validate()
            let key = "request:" + request.requestId
            guard !state.seen.contains(key) else { return }
            state.seen.remember(key, capacity: settings.rememberedRequestIds)
            context.emitIntent(.accessRequest, data: [
                "request_id": .string(request.requestId),
                "requester_name": .string(request.requesterName),
                "field": .string(request.field),
            ])
            context.emitSectionItem(
                section: Section.needsAttention, itemId: "access_request:" + request.requestId,
                item: [
                    "kind": "access_request",
                    "request_id": .string(request.requestId),
                    "requester_name": .string(request.requesterName),
                    "field": .string(request.field),
                ])
        case .securityNewSignin(let alert):
            raise(.newSignin, alert, state: &state, context: &context)
        case .securitySuspiciousActivity(let alert):
            raise(.suspiciousActivity, alert, state: &state, context: &context)
        case .tick:
            return
        default:
            throw RecordError("access-worker does not process records of type '\(record.type)'")
        }
    }

    public func fireTimers(state: inout AccessState, context: inout ProcessingContext) {}

    public func nextWakeUp(_ state: AccessState) -> Timestamp? { nil }
    public static let nextWakeUpDependsOnStateAlone = true

    private func raise(_ notification: UpstreamNotification, _ alert: SecurityAlert, state: inout AccessState, context: inout ProcessingContext) {
        let key = "alert:" + alert.id
        guard !state.seen.contains(key) else { return }
        state.seen.remember(key, capacity: settings.rememberedRequestIds)
        context.emitIntent(notification, data: ["detail": .string(alert.detail)])
    }
}
