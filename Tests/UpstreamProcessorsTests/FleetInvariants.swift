import FleetModel

/// A broken fleet-wide rule found in a run's output.
struct InvariantViolation: Hashable, Sendable, CustomStringConvertible {
    var rule: String
    var userId: String
    var time: Timestamp
    var detail: String

    var description: String { "\(rule) \(userId) at \(time): \(detail)" }
}

/// Checks over the records a whole-fleet run produced (deliveries on `rin.notify.deliveries`),
/// against the external inputs that drove it. Independent of the delivery engine's code: it
/// recomputes local days and inactivity from the inputs.
struct FleetInvariants {
    /// Per user, the zone changes and the opens (sign-up counts as an open), in time order.
    private var zones: [String: [(Timestamp, Zone)]] = [:]
    private var opens: [String: [Timestamp]] = [:]

    static let tierNotifications: Set<String> = ["retention.lapsed_summary", "retention.value_reminder"]

    init(inputs: [TimedInput]) {
        for input in inputs.sorted(by: { $0.time < $1.time }) {
            switch input.record {
            case .userSignedUp(let signup):
                zones[signup.userId, default: []].append((input.time, signup.timeZone))
                opens[signup.userId, default: []].append(input.time)
            case .settingsChanged(let change):
                if let zone = change.timeZone { zones[change.userId, default: []].append((input.time, zone)) }
            case .appOpened(let open):
                opens[open.userId, default: []].append(input.time)
            default:
                break
            }
        }
    }

    /// Every violation of every check below.
    func all(outputs: [OutputRecord], budget: Int = 3, quietAfterDays: Int = 14, quietWindowDays: Int = 7, dormantAfterDays: Int = 60) -> [InvariantViolation] {
        dailyBudget(outputs, limit: budget)
            + quietMode(outputs, quietAfterDays: quietAfterDays, windowDays: quietWindowDays, dormantAfterDays: dormantAfterDays)
            + tiersOncePerLapse(outputs)
            + distinctIds(outputs)
    }

    /// DESIGN.md "Topics and records": every record has a unique `id`. Output ids derive from
    /// log coordinates (`OutputIDs`: the record's own, or for one a worker wrote into an inbox,
    /// its origin's), and a collision is not harmless: the delivery engine takes an intent id it
    /// has seen as a replay and drops the second intent (P-IDEM-1).
    func distinctIds(_ outputs: [OutputRecord]) -> [InvariantViolation] {
        var seen: Set<String> = []
        var violations: [InvariantViolation] = []
        for output in outputs where !seen.insert(output.record.id).inserted {
            violations.append(InvariantViolation(
                rule: "P-IDEM-1", userId: output.record.userId, time: output.timestamp,
                detail: "id \(output.record.id) of a \(output.record.type) on \(output.topic) was used before"))
        }
        return violations
    }

    /// P-BUD-1: at most `limit` non-security deliveries per user per local day, all channels.
    func dailyBudget(_ outputs: [OutputRecord], limit: Int = 3) -> [InvariantViolation] {
        var counts: [String: Int] = [:]
        var violations: [InvariantViolation] = []
        for (time, delivery) in deliveries(outputs) where delivery.category != "SECURITY" {
            let day = zone(of: delivery.userId, at: time).localDate(at: time)
            let key = "\(delivery.userId) \(day)"
            counts[key, default: 0] += 1
            if counts[key] == limit + 1 {
                violations.append(InvariantViolation(
                    rule: "P-BUD-1", userId: delivery.userId, time: time,
                    detail: "more than \(limit) non-security deliveries on local day \(day)"))
            }
        }
        return violations
    }

    /// P-LAP-3 / P-LAP-5: from `quietAfterDays` local days without an open, only tier
    /// notifications (besides SECURITY and reminders) are delivered, at most one per
    /// `windowDays`; from `dormantAfterDays`, no push at all but SECURITY.
    func quietMode(_ outputs: [OutputRecord], quietAfterDays: Int = 14, windowDays: Int = 7, dormantAfterDays: Int = 60) -> [InvariantViolation] {
        var violations: [InvariantViolation] = []
        var lastQuietDelivery: [String: Timestamp] = [:]
        for (time, delivery) in deliveries(outputs) where delivery.category != "SECURITY" {
            let user = delivery.userId
            guard let lastOpen = lastOpen(of: user, atOrBefore: time) else { continue }
            let zone = zone(of: user, at: time)
            let inactive = zone.localDate(at: lastOpen).days(until: zone.localDate(at: time))
            if inactive >= dormantAfterDays && delivery.channel == .push {
                violations.append(InvariantViolation(
                    rule: "P-LAP-5", userId: user, time: time, detail: "\(delivery.notification) pushed after \(inactive) days inactive"))
            }
            guard inactive >= quietAfterDays, delivery.category != "REMINDER" else { continue }
            if !Self.tierNotifications.contains(delivery.notification) {
                violations.append(InvariantViolation(
                    rule: "P-LAP-3", userId: user, time: time,
                    detail: "\(delivery.notification) delivered in quiet mode (\(inactive) days inactive)"))
            }
            if let previous = lastQuietDelivery[user], previous > lastOpen, time - previous < .days(Int64(windowDays)) {
                violations.append(InvariantViolation(
                    rule: "P-LAP-3", userId: user, time: time,
                    detail: "second quiet-mode notification within \(windowDays) days (previous at \(previous))"))
            }
            lastQuietDelivery[user] = time
        }
        return violations
    }

    /// P-LAP-6: each tier notification at most once per lapse (between two opens).
    func tiersOncePerLapse(_ outputs: [OutputRecord]) -> [InvariantViolation] {
        var seen: Set<String> = []
        var violations: [InvariantViolation] = []
        for (time, delivery) in deliveries(outputs) where Self.tierNotifications.contains(delivery.notification) {
            let lapse = lastOpen(of: delivery.userId, atOrBefore: time)?.rfc3339 ?? "-"
            let key = "\(delivery.userId) \(delivery.notification) \(lapse)"
            if !seen.insert(key).inserted {
                violations.append(InvariantViolation(
                    rule: "P-LAP-6", userId: delivery.userId, time: time,
                    detail: "\(delivery.notification) twice in the lapse since \(lapse)"))
            }
        }
        return violations
    }

    private func deliveries(_ outputs: [OutputRecord]) -> [(Timestamp, Delivery)] {
        outputs.compactMap { output in
            if output.topic == Topics.deliveries, case .delivery(let d) = output.record { (output.timestamp, d) } else { nil }
        }
    }

    private func zone(of user: String, at time: Timestamp) -> Zone {
        zones[user]?.last { $0.0 <= time }?.1 ?? .utc
    }

    private func lastOpen(of user: String, atOrBefore time: Timestamp) -> Timestamp? {
        opens[user]?.last { $0 <= time }
    }
}
