import Foundation
import FleetModel

extension DeliveryState: Codable {
    enum CodingKeys: String, CodingKey {
        case zone = "z", quietHours = "q", pushEnabled = "p", notificationsDenied = "nd", emailOptIn = "e", premium = "pr"
        case disabledCategories = "dc", signedUpAt = "su", lastOpenAt = "lo", lastActionAt = "la", streak = "st"
        case lapse = "lp", lastScore = "ls", lastDeliveredCategory = "lc", sinceOpen = "so", topPending = "tp"
        case day = "d", recent = "r", keyedCaps = "k", lifetime = "lt", dismissals = "ds", cooldownUntil = "cu"
        case pending = "pe", memory = "m", lapseDueAt = "w"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        zone = try c.decodeIfPresent(Zone.self, forKey: .zone)
        quietHours = try c.decodeIfPresent(QuietHours.self, forKey: .quietHours)
        pushEnabled = try c.decodeIfPresent(Bool.self, forKey: .pushEnabled) ?? true
        notificationsDenied = try c.decodeIfPresent(Bool.self, forKey: .notificationsDenied) ?? false
        emailOptIn = try c.decodeIfPresent(Bool.self, forKey: .emailOptIn) ?? false
        premium = try c.decodeIfPresent(Bool.self, forKey: .premium) ?? false
        disabledCategories = try c.decodeIfPresent([String].self, forKey: .disabledCategories) ?? []
        signedUpAt = try c.decodeIfPresent(Millis.self, forKey: .signedUpAt)?.timestamp
        lastOpenAt = try c.decodeIfPresent(Millis.self, forKey: .lastOpenAt)?.timestamp
        lastActionAt = try c.decodeIfPresent(Millis.self, forKey: .lastActionAt)?.timestamp
        streak = try c.decodeIfPresent(Streak.self, forKey: .streak)
        lapse = try c.decodeIfPresent(LapseState.self, forKey: .lapse) ?? LapseState()
        lastScore = try c.decodeIfPresent(Int.self, forKey: .lastScore)
        lastDeliveredCategory = try c.decodeIfPresent(String.self, forKey: .lastDeliveredCategory)
        sinceOpen = try c.decodeIfPresent(SinceOpenTotals.self, forKey: .sinceOpen) ?? SinceOpenTotals()
        topPending = try c.decodeIfPresent(PendingIntent.self, forKey: .topPending)
        day = try c.decodeIfPresent(DayLedger.self, forKey: .day)
        recent = try c.decodeIfPresent([RecentDelivery].self, forKey: .recent) ?? []
        keyedCaps = try c.decodeIfPresent([KeyedCap].self, forKey: .keyedCaps) ?? []
        lifetime = try c.decodeIfPresent([String: Int].self, forKey: .lifetime) ?? [:]
        dismissals = try c.decodeIfPresent([Dismissal].self, forKey: .dismissals) ?? []
        cooldownUntil = try c.decodeIfPresent([String: Millis].self, forKey: .cooldownUntil)?.mapValues(\.timestamp) ?? [:]
        pending = try c.decodeIfPresent([Candidate].self, forKey: .pending) ?? []
        lapseDueAt = try c.decodeIfPresent(Millis.self, forKey: .lapseDueAt)?.timestamp
        memory = try c.decodeIfPresent(IdempotencyMemory.self, forKey: .memory) ?? IdempotencyMemory()
    }

    /// Leaves out every default and empty collection, so an idle user costs little in the
    /// changelog.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(zone, forKey: .zone)
        try c.encodeIfPresent(quietHours, forKey: .quietHours)
        if !pushEnabled { try c.encode(false, forKey: .pushEnabled) }
        if notificationsDenied { try c.encode(true, forKey: .notificationsDenied) }
        if emailOptIn { try c.encode(true, forKey: .emailOptIn) }
        if premium { try c.encode(true, forKey: .premium) }
        if !disabledCategories.isEmpty { try c.encode(disabledCategories, forKey: .disabledCategories) }
        try c.encodeIfPresent(signedUpAt.map(Millis.init), forKey: .signedUpAt)
        try c.encodeIfPresent(lastOpenAt.map(Millis.init), forKey: .lastOpenAt)
        try c.encodeIfPresent(lastActionAt.map(Millis.init), forKey: .lastActionAt)
        try c.encodeIfPresent(streak, forKey: .streak)
        if !lapse.isEmpty { try c.encode(lapse, forKey: .lapse) }
        try c.encodeIfPresent(lastScore, forKey: .lastScore)
        try c.encodeIfPresent(lastDeliveredCategory, forKey: .lastDeliveredCategory)
        if !sinceOpen.isEmpty { try c.encode(sinceOpen, forKey: .sinceOpen) }
        try c.encodeIfPresent(topPending, forKey: .topPending)
        try c.encodeIfPresent(day, forKey: .day)
        if !recent.isEmpty { try c.encode(recent, forKey: .recent) }
        if !keyedCaps.isEmpty { try c.encode(keyedCaps, forKey: .keyedCaps) }
        if !lifetime.isEmpty { try c.encode(lifetime, forKey: .lifetime) }
        if !dismissals.isEmpty { try c.encode(dismissals, forKey: .dismissals) }
        if !cooldownUntil.isEmpty { try c.encode(cooldownUntil.mapValues(Millis.init), forKey: .cooldownUntil) }
        if !pending.isEmpty { try c.encode(pending, forKey: .pending) }
        try c.encodeIfPresent(lapseDueAt.map(Millis.init), forKey: .lapseDueAt)
        if !memory.isEmpty { try c.encode(memory, forKey: .memory) }
    }
}

extension DeliveryState {
    /// The canonical bytes of a state (sorted keys), as the runtime stores them in the changelog.
    public func serialized() -> [UInt8] {
        do {
            return Array(try Self.encoder.encode(self))
        } catch {
            // Our own value types always encode; reaching this is a programming error.
            preconditionFailure("encoding DeliveryState failed: \(error)")
        }
    }

    /// Restores a state written by `serialized()`.
    public init(serialized bytes: some Collection<UInt8>) throws {
        self = try JSONDecoder().decode(DeliveryState.self, from: Data(bytes))
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
