import FleetModel

/// One fold step of the sender: the state and context it changes, and the decisions.
///
/// Every loop over deliveries or devices goes in id order, and every id it hands out derives
/// from the delivery id or the log position, so the same input always gives the same output.
struct SenderStep {
    let policy: SenderPolicy
    var state: SenderState
    var context: ProcessingContext

    var now: Timestamp { context.now }

    // MARK: Deliveries

    /// A delivery from `rin.notify.deliveries`. Each delivery id is sent once, however many
    /// copies of it the topic holds (a copy of one in progress or finished changes nothing).
    mutating func deliveryArrived(_ delivery: Delivery) {
        guard state.deliveries[delivery.id] == nil, state.finished[delivery.id] == nil else { return }
        let expiresAt = now + policy.maximumAge
        switch delivery.channel {
        case .push: startPush(delivery, expiresAt: expiresAt)
        case .email: startEmail(delivery, expiresAt: expiresAt, fallback: false)
        }
    }

    private mutating func startPush(_ delivery: Delivery, expiresAt: Timestamp) {
        if state.pushEnabled == false { return pushNotTried(delivery, expiresAt: expiresAt, reason: "push_disabled") }
        let devices = activeDevices { $0 != .email }
        if devices.isEmpty { return pushNotTried(delivery, expiresAt: expiresAt, reason: "no_device") }
        let content = MessageContent(delivery)
        let targets = devices.map { id, device in
            var target = Target(deviceId: id, provider: device.platform.provider, stage: .waiting(until: now, renewCredentials: false))
            // Refused before sending: the provider would refuse it for good anyway.
            if let refusal = ProviderPayloads.refusal(of: content, for: target.provider) { target.stage = .failed(reason: refusal) }
            return target
        }
        state.deliveries[delivery.id] = DeliveryProgress(
            delivery: delivery, arrivedAt: now, expiresAt: expiresAt, channel: .push, targets: targets)
        advance(delivery.id)
    }

    /// A push delivery with nowhere to go: by email if the user allows it, else skipped.
    private mutating func pushNotTried(_ delivery: Delivery, expiresAt: Timestamp, reason: String) {
        if fallbackAllowed(delivery) {
            emitReceipt(delivery, channel: .push, status: .fellBack, attempts: 0, reason: reason)
            startEmail(delivery, expiresAt: expiresAt, fallback: true)
        } else {
            emitReceipt(delivery, channel: .push, status: .skipped, attempts: 0, reason: reason)
            finish(delivery.id)
        }
    }

    private mutating func startEmail(_ delivery: Delivery, expiresAt: Timestamp, fallback: Bool) {
        if !fallback, state.emailOptIn == false {
            emitReceipt(delivery, channel: .email, status: .skipped, attempts: 0, reason: "unsubscribed")
            return finish(delivery.id)
        }
        guard let (id, _) = activeDevices({ $0 == .email }).first else {
            emitReceipt(delivery, channel: .email, status: .skipped, attempts: 0, reason: "no_email_address")
            return finish(delivery.id)
        }
        let target = Target(deviceId: id, provider: .email, stage: .waiting(until: now, renewCredentials: false))
        state.deliveries[delivery.id] = DeliveryProgress(
            delivery: delivery, arrivedAt: now, expiresAt: expiresAt, channel: .email, targets: [target])
        advance(delivery.id)
    }

    /// Fallback needs an explicit opt-in, a type that may go by email, and an address.
    private func fallbackAllowed(_ delivery: Delivery) -> Bool {
        state.emailOptIn == true && policy.emailFallbackTypes.contains(delivery.notification)
            && !activeDevices({ $0 == .email }).isEmpty
    }

    // MARK: Answers

    /// The effect stage's answer to an attempt. An answer to anything but the attempt in
    /// flight (a copy re-written after a crash, or one for a delivery already settled) changes
    /// nothing.
    mutating func answerArrived(_ result: SendResult) {
        guard var progress = state.deliveries[result.deliveryId],
            let index = progress.targets.firstIndex(where: {
                if case .inFlight(let attemptId, _) = $0.stage { attemptId == result.attemptId } else { false }
            }),
            case .inFlight(_, let token) = progress.targets[index].stage
        else { return }
        var target = progress.targets[index]
        let reason = result.reason ?? result.status.map { "status \($0)" } ?? result.outcome.rawValue
        switch result.outcome {
        case .accepted:
            target.stage = .sent(providerId: result.providerId)
        case .rejected:
            target.stage = .failed(reason: reason)
        case .invalidToken:
            target.stage = .invalidated(reason: reason)
        case .credentialsExpired:
            if target.credentialsRenewed {
                target.stage = .failed(reason: "\(reason) again after renewing the provider token")
            } else {
                target.credentialsRenewed = true
                target.stage = .waiting(until: now, renewCredentials: true)
            }
        case .retryable:
            if !Self.isOutage(result) { target.countedFailures += 1 }
            target.stage = retryStage(for: target, attemptId: result.attemptId, result: result, reason: reason, expiresAt: progress.expiresAt)
        }
        progress.targets[index] = target
        state.deliveries[result.deliveryId] = progress
        if case .invalidated = target.stage {
            invalidate(token: token, reason: reason, attemptId: result.attemptId)
        }
        advance(result.deliveryId)
    }

    /// After a retryable answer: wait (exponential, jittered by the attempt id, at least the
    /// provider's `Retry-After`), or give up when the tries or the delivery's age are used up.
    private mutating func retryStage(
        for target: Target, attemptId: String, result: SendResult, reason: String, expiresAt: Timestamp
    ) -> TargetStage {
        if target.countedFailures >= policy.maximumTries {
            return .failed(reason: "gave up after \(target.tries) tries: \(reason)")
        }
        let wait = Backoff.delay(
            afterTries: target.tries, attemptId: attemptId, base: policy.baseBackoff, maximum: policy.maximumBackoff,
            retryAfter: result.retryAfterMs.map { TimeSpan(milliseconds: $0) })
        var due = now + wait
        if let device = state.devices[target.deviceId] {
            if let until = device.backoffUntil, until > due { due = until }
            // A 429 is about the device (APNs: too many requests for this token): every
            // delivery to it waits.
            if result.status == 429 { state.devices[target.deviceId]?.backoffUntil = due }
        }
        if due > expiresAt {
            return .expired(reason: "maximum age reached after \(target.tries) tries: \(reason)")
        }
        return .waiting(until: due, renewCredentials: false)
    }

    /// No answer at all, or 503: the provider is down, not refusing this send.
    static func isOutage(_ result: SendResult) -> Bool { result.status == nil || result.status == 503 }

    // MARK: Devices

    mutating func deviceRegistered(_ registration: DeviceRegistered) {
        var entry = DeviceEntry(
            registrationId: registration.id, platform: registration.platform, token: registration.token, app: registration.app,
            locale: registration.locale)
        if let previous = state.devices[registration.deviceId], previous.token == registration.token {
            // The same token registered again stays dead if it was found dead (never tried
            // again), and keeps its backoff.
            entry.invalidated = previous.invalidated
            entry.backoffUntil = previous.backoffUntil
            if previous.invalidated != nil { entry.registrationId = previous.registrationId }
        }
        state.devices[registration.deviceId] = entry
    }

    mutating func deviceUnregistered(_ deviceId: String) {
        guard state.devices.removeValue(forKey: deviceId) != nil else { return }
        endWaitingTargets(on: deviceId, as: .failed(reason: "device unregistered"))
    }

    /// A `device.invalidated` read back from `rin.devices` (the sender's own, or another
    /// writer's): applies only to the registration it names.
    mutating func deviceInvalidated(_ invalidation: DeviceInvalidated) {
        guard let device = state.devices[invalidation.deviceId], device.registrationId == invalidation.registrationId,
            device.invalidated == nil
        else { return }
        state.devices[invalidation.deviceId]?.invalidated = invalidation.reason
        endWaitingTargets(on: invalidation.deviceId, as: .invalidated(reason: invalidation.reason))
    }

    /// Remembers the token as dead; marks every device registered with it dead, tells
    /// `rin.devices`, and ends every other delivery's wait for them. A device registered anew
    /// with another token since the attempt stays active.
    private mutating func invalidate(token: String, reason: String, attemptId: String) {
        state.rememberDeadToken(token, keeping: policy.maximumDevices)
        for deviceId in state.devices.keys.sorted() {
            guard let device = state.devices[deviceId], device.token == token, device.invalidated == nil else { continue }
            state.devices[deviceId]?.invalidated = reason
            let invalidation = DeviceInvalidated(
                id: context.nextID(), userId: context.userId, deviceId: deviceId, reason: reason, attemptId: attemptId,
                registrationId: device.registrationId)
            context.emit(.sender(.deviceInvalidated(invalidation)), to: Topics.devices)
            endWaitingTargets(on: deviceId, as: .invalidated(reason: reason))
        }
    }

    private mutating func endWaitingTargets(on deviceId: String, as stage: TargetStage) {
        for deliveryId in state.deliveries.keys.sorted() {
            guard var progress = state.deliveries[deliveryId] else { continue }
            var changed = false
            for index in progress.targets.indices where progress.targets[index].deviceId == deviceId {
                if case .waiting = progress.targets[index].stage {
                    progress.targets[index].stage = stage
                    changed = true
                }
            }
            guard changed else { continue }
            state.deliveries[deliveryId] = progress
            advance(deliveryId)
        }
    }

    private func activeDevices(_ platforms: (DevicePlatform) -> Bool) -> [(String, DeviceEntry)] {
        state.devices.filter { $0.value.isActive && deadTokenReason($0.value) == nil && platforms($0.value.platform) }
            .sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// A token found dead under any device id stays dead under every other.
    private func deadTokenReason(_ device: DeviceEntry) -> String? {
        state.deadTokens.contains(device.token) ? "token found dead earlier" : nil
    }

    // MARK: Time

    /// Sends what came due, gives up answers that never came, forgets old finished ids.
    mutating func fireDue() {
        for deliveryId in state.deliveries.keys.sorted() { advance(deliveryId) }
        state.finished = state.finished.filter { now < $0.value + policy.deduplicationWindow }
    }

    /// Emits the attempts of `deliveryId` that are due, and settles it once every target is final.
    private mutating func advance(_ deliveryId: String) {
        guard var progress = state.deliveries[deliveryId] else { return }
        for index in progress.targets.indices {
            switch progress.targets[index].stage {
            case .waiting(let until, let renew):
                guard let device = state.devices[progress.targets[index].deviceId] else {
                    progress.targets[index].stage = .failed(reason: "device unregistered")
                    continue
                }
                if let reason = device.invalidated ?? deadTokenReason(device) {
                    progress.targets[index].stage = .invalidated(reason: reason)
                    continue
                }
                guard device.platform.provider == progress.targets[index].provider else {
                    progress.targets[index].stage = .failed(reason: "device re-registered for another platform")
                    continue
                }
                let due = max(until, device.backoffUntil ?? until)
                if due > now {
                    progress.targets[index].stage = .waiting(until: due, renewCredentials: renew)
                    continue
                }
                progress.targets[index].tries += 1
                let attempt = makeAttempt(progress, target: progress.targets[index], device: device, renewCredentials: renew)
                // Its id derives from the delivery id (provider idempotency), not from this step.
                context.emit(.sender(.attempt(attempt)), to: Topics.sendAttempts, hasOwnId: true)
                progress.targets[index].stage = .inFlight(attemptId: attempt.id, token: device.token)
            case .inFlight:
                if now >= progress.expiresAt + policy.answerGrace {
                    progress.targets[index].stage = .expired(reason: "no answer from the provider by the maximum age")
                }
            case .sent, .failed, .invalidated, .expired:
                break
            }
        }
        state.deliveries[deliveryId] = progress
        if progress.targets.allSatisfy(\.stage.isFinal) { settle(progress) }
    }

    /// `<delivery>~<channel>~<device>~<try>`: the same in every re-run, different for every
    /// try, channel (a fallback starts its tries anew) and device.
    static func attemptId(deliveryId: String, channel: DeliveryChannel, deviceId: String, try number: Int) -> String {
        "\(deliveryId)~\(channel.rawValue)~\(deviceId)~\(number)"
    }

    private func makeAttempt(_ progress: DeliveryProgress, target: Target, device: DeviceEntry, renewCredentials: Bool) -> SendAttempt {
        let delivery = progress.delivery
        return SendAttempt(
            id: Self.attemptId(deliveryId: delivery.id, channel: progress.channel, deviceId: target.deviceId, try: target.tries), userId: context.userId,
            deliveryId: delivery.id, notificationId: delivery.notificationId, attempt: target.tries, provider: target.provider,
            deviceId: target.deviceId, token: device.token, app: device.app, notification: delivery.notification,
            category: delivery.category, title: delivery.title, body: delivery.body, deepLink: delivery.deepLink,
            expiresAt: progress.expiresAt, refreshCredentials: renewCredentials)
    }

    // MARK: Receipts

    /// Every target is final: the channel's receipt, and for push that did not get through,
    /// the email fallback when allowed.
    private mutating func settle(_ progress: DeliveryProgress) {
        let delivery = progress.delivery
        let attempts = progress.targets.reduce(0) { $0 + $1.tries }
        let providers = Set(progress.targets.map(\.provider))
        let provider = providers.count == 1 ? providers.first : nil
        for target in progress.targets {
            if case .sent(let providerId) = target.stage {
                emitReceipt(delivery, channel: progress.channel, status: .sent, attempts: attempts, provider: target.provider, providerId: providerId)
                return finish(delivery.id)
            }
        }
        let (status, reason) = Self.failure(of: progress.targets)
        if progress.channel == .push, fallbackAllowed(delivery) {
            emitReceipt(delivery, channel: .push, status: .fellBack, attempts: attempts, provider: provider, reason: "\(status.rawValue): \(reason)")
            state.deliveries[delivery.id] = nil
            return startEmail(delivery, expiresAt: progress.expiresAt, fallback: true)
        }
        emitReceipt(delivery, channel: progress.channel, status: status, attempts: attempts, provider: provider, reason: reason)
        finish(delivery.id)
    }

    /// Why no target got through: `token_invalid` when every device was found dead, `expired`
    /// when one ran out of time, else `failed` with the first device's reason.
    static func failure(of targets: [Target]) -> (ReceiptStatus, String) {
        var invalid: [String] = [], expired: [String] = [], failed: [String] = []
        for target in targets {
            switch target.stage {
            case .invalidated(let reason): invalid.append(reason)
            case .expired(let reason): expired.append(reason)
            case .failed(let reason): failed.append(reason)
            case .waiting, .inFlight, .sent: break
            }
        }
        if !invalid.isEmpty, expired.isEmpty, failed.isEmpty { return (.tokenInvalid, invalid[0]) }
        if let reason = expired.first { return (.expired, reason) }
        return (.failed, failed.first ?? invalid.first ?? "no target")
    }

    private mutating func emitReceipt(
        _ delivery: Delivery, channel: DeliveryChannel, status: ReceiptStatus, attempts: Int, provider: SendProvider? = nil,
        providerId: String? = nil, reason: String? = nil
    ) {
        let receipt = Receipt(
            id: context.nextID(), userId: context.userId, deliveryId: delivery.id, notificationId: delivery.notificationId,
            channel: channel, status: status, attempts: attempts, provider: provider, providerId: providerId, reason: reason)
        context.emit(.sender(.receipt(receipt)), to: Topics.receipts)
    }

    private mutating func finish(_ deliveryId: String) {
        state.deliveries[deliveryId] = nil
        state.finished[deliveryId] = now
    }
}
