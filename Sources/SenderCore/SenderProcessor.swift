public import FleetModel

/// The sender's fold (issue 17, "decide purely, act at the edge"): reads deliveries, device
/// records, settings and the effect stage's answers from `rin.sender.inbox`, and decides every
/// attempt (`send.attempt` to `rin.sender.attempts`), every invalidation (`device.invalidated`
/// to `rin.devices`) and every receipt (`rin.notify.receipts`). It reads no clock and makes no
/// call, so retries, backoff and invalidation replay and explain like every other decision.
public struct SenderProcessor: UserProcessor {
    public let policy: SenderPolicy

    public init(policy: SenderPolicy = SenderPolicy()) { self.policy = policy }

    public func initialState(userId: String) -> SenderState { SenderState() }

    public func process(_ record: FleetRecord, state: inout SenderState, context: inout ProcessingContext) throws(RecordError) {
        var step = SenderStep(policy: policy, state: state, context: context)
        switch record {
        case .tick:
            return  // timers were fired by the runtime before this record
        case .delivery(let delivery):
            if state.deliveries[delivery.id] == nil, state.finished[delivery.id] == nil,
                state.deliveries.count >= policy.maximumDeliveriesInProgress
            {
                throw RecordError(
                    "user has \(state.deliveries.count) deliveries in progress, the most the sender holds (\(policy.maximumDeliveriesInProgress))")
            }
            step.deliveryArrived(delivery)
        case .sender(.deviceRegistered(let registration)):
            if state.devices[registration.deviceId] == nil, state.devices.count >= policy.maximumDevices {
                throw RecordError("user has \(state.devices.count) devices, the most the sender holds (\(policy.maximumDevices))")
            }
            step.deviceRegistered(registration)
        case .sender(.deviceUnregistered(let removal)):
            step.deviceUnregistered(removal.deviceId)
        case .sender(.deviceInvalidated(let invalidation)):
            step.deviceInvalidated(invalidation)
        case .sender(.result(let result)):
            step.answerArrived(result)
        case .settingsChanged(let settings):
            if let pushEnabled = settings.pushEnabled { step.state.pushEnabled = pushEnabled }
            if let emailOptIn = settings.emailOptIn { step.state.emailOptIn = emailOptIn }
        default:
            throw RecordError("type '\(record.type)' does not belong on topic '\(Topics.senderInbox)'")
        }
        state = step.state
        context = step.context
    }

    public func fireTimers(state: inout SenderState, context: inout ProcessingContext) {
        var step = SenderStep(policy: policy, state: state, context: context)
        step.fireDue()
        state = step.state
        context = step.context
    }

    public func nextWakeUp(_ state: SenderState) -> Timestamp? {
        var earliest: Timestamp?
        func consider(_ time: Timestamp) { if earliest.map({ time < $0 }) ?? true { earliest = time } }
        for progress in state.deliveries.values {
            var waitsForAnswer = false
            for target in progress.targets {
                switch target.stage {
                case .waiting(let until, _): consider(until)
                case .inFlight: waitsForAnswer = true
                default: break
                }
            }
            if waitsForAnswer { consider(progress.expiresAt + policy.answerGrace) }
        }
        for finishedAt in state.finished.values { consider(finishedAt + policy.deduplicationWindow) }
        return earliest
    }
}
