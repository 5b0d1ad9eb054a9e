import Foundation
public import FleetModel
import StateImages
import SwiftProtobuf

/// The delivery state's binary image (`fleet.state.DeliveryState` in Protos/fleet_state.proto):
/// what the delivery worker writes to its changelog and history.
///
/// Why protobuf: a schema with explicit field numbers gives the evolution rules (a field added,
/// a field retired) for free and a decoder that is fuzzed upstream; varint times and numbers and
/// no key names make an idle user's image a fraction of its JSON (see `Benchmarks/README.md`).
/// The mapping is exact: every field round-trips as it is in memory (the JSON encoding dropped
/// an all-zero `day_one`), so a restored state equals the folded one. Only the two in-memory
/// memos are not part of the image, as in JSON.
extension DeliveryState: BinaryStateImage {
    /// 1: the first binary format.
    public static let stateImageFormat: UInt32 = 1

    public func binaryImage() throws(StateImageError) -> [UInt8] {
        var m = Fleet_State_DeliveryState()
        m.format = Self.stateImageFormat
        m.zone = zone?.identifier ?? ""
        if let quietHours {
            m.quietHours = .with { $0.start = UInt32(quietHours.start.minuteOfDay); $0.end = UInt32(quietHours.end.minuteOfDay) }
        }
        m.pushDisabled = !pushEnabled
        m.notificationsDenied = notificationsDenied
        m.emailOptIn = emailOptIn
        m.premium = premium
        m.disabledCategories = disabledCategories
        if let signedUpAt { m.signedUpAt = signedUpAt.millisecondsSinceEpoch }
        if let lastOpenAt { m.lastOpenAt = lastOpenAt.millisecondsSinceEpoch }
        if let lastActionAt { m.lastActionAt = lastActionAt.millisecondsSinceEpoch }
        if let streak {
            m.streak = .with { $0.current = Int64(streak.current); $0.longest = Int64(streak.longest); $0.lastDay = Int64(streak.lastDay) }
        }
        if !lapse.isEmpty { m.lapse = Self.image(of: lapse) }
        if let lastScore { m.lastScore = Int64(lastScore) }
        if let lastDeliveredCategory { m.lastDeliveredCategory = lastDeliveredCategory }
        if !sinceOpen.isEmpty { m.sinceOpen = Self.image(of: sinceOpen) }
        if let topPending { m.topPending = try Self.image(of: topPending) }
        if let day { m.day = Self.image(of: day) }
        m.recent = recent.map { r in .with { $0.type = r.type; $0.at = r.at.millisecondsSinceEpoch; $0.bodyHash = r.bodyHash } }
        m.keyedCaps = keyedCaps.map { c in
            .with { $0.type = c.type; $0.keyHash = c.keyHash; $0.period = Int64(c.period); $0.count = Int64(c.count) }
        }
        m.lifetime = lifetime.sorted { $0.key < $1.key }.map { entry in .with { $0.name = entry.key; $0.count = Int64(entry.value) } }
        m.dismissals = dismissals.map { d in .with { $0.category = d.category; $0.at = d.at.millisecondsSinceEpoch } }
        m.cooldownUntil = cooldownUntil.sorted { $0.key < $1.key }.map { entry in
            .with { $0.name = entry.key; $0.at = entry.value.millisecondsSinceEpoch }
        }
        m.pending = try pending.map { candidate throws(StateImageError) in try Self.image(of: candidate) }
        if let lapseDueAt { m.lapseDueAt = lapseDueAt.millisecondsSinceEpoch }
        m.memory = Data(memory.packed())
        do {
            return try m.serializedBytes()
        } catch {
            throw StateImageError("delivery state did not encode: \(error)")
        }
    }

    /// Every field of `binaryImage()` at its widest (`ImageSizeBound`): walks the state's lists
    /// and strings, but builds nothing. `StateImageTests` checks it against the true size.
    public func binaryImageSizeBound() -> Int? {
        typealias B = ImageSizeBound
        // format, quiet hours, the four flags, the three times, last score, lapse due.
        var bound = 10 * B.scalar + B.framed(2 * B.scalar)
        bound += B.string(zone?.identifier) + B.strings(disabledCategories) + B.string(lastDeliveredCategory)
        if streak != nil { bound += B.framed(3 * B.scalar) }
        if !lapse.isEmpty {
            bound += B.framed(5 * B.scalar + B.string(lapse.tierNotificationId) + B.string(lapse.tierKind))
        }
        if !sinceOpen.isEmpty { bound += B.framed(7 * B.scalar + B.packed(count: sinceOpen.birthdayDays.count)) }
        if let topPending { bound += B.framed(Self.sizeBound(of: topPending)) }
        if let day {
            bound += B.framed(3 * B.scalar + day.byType.keys.reduce(0) { $0 + B.framed(B.string($1) + B.scalar) }
                + B.packed(count: day.dayOne.count) + B.strings(day.heldBack))
        }
        bound += recent.reduce(0) { $0 + B.framed(B.string($1.type) + 2 * B.scalar) }
        bound += keyedCaps.reduce(0) { $0 + B.framed(B.string($1.type) + 3 * B.scalar) }
        bound += lifetime.keys.reduce(0) { $0 + B.framed(B.string($1) + B.scalar) }
        bound += dismissals.reduce(0) { $0 + B.framed(B.string($1.category) + B.scalar) }
        bound += cooldownUntil.keys.reduce(0) { $0 + B.framed(B.string($1) + B.scalar) }
        // By position in spans: iterating the lists copied every candidate and intent.
        let pending = pending.span
        for index in pending.indices { bound += B.framed(Self.sizeBound(of: pending[index])) }
        bound += B.framed(memory.count * 12)
        return bound
    }

    private static func sizeBound(of intent: borrowing PendingIntent) -> Int {
        ImageSizeBound.string(intent.id) + ImageSizeBound.string(intent.type) + ImageSizeBound.framed(intent.dataSizeBound.value)
            + 2 * ImageSizeBound.scalar
    }

    private static func sizeBound(of candidate: borrowing Candidate) -> Int {
        // kind, phase, first arrival, due, until.
        var bound = 5 * ImageSizeBound.scalar + ImageSizeBound.string(candidate.category)
            + ImageSizeBound.string(candidate.notificationId) + ImageSizeBound.strings(candidate.summarised)
        let intents = candidate.intents.span
        for index in intents.indices { bound += ImageSizeBound.framed(sizeBound(of: intents[index])) }
        return bound
    }

    public init(binaryImage bytes: [UInt8]) throws(StateImageError) {
        let m: Fleet_State_DeliveryState
        do {
            m = try Fleet_State_DeliveryState(serializedBytes: bytes)
        } catch {
            throw StateImageError("delivery state image does not decode (\(bytes.count) bytes): \(error)")
        }
        try StateImageFormat.check(m.format, reads: Self.stateImageFormat, of: "delivery state")
        var s = DeliveryState()
        s.zone = try StateImageFormat.zone(m.zone, "zone")
        if m.hasQuietHours {
            s.quietHours = QuietHours(
                start: try StateImageFormat.timeOfDay(m.quietHours.start, "quiet_hours.start"),
                end: try StateImageFormat.timeOfDay(m.quietHours.end, "quiet_hours.end"))
        }
        s.pushEnabled = !m.pushDisabled
        s.notificationsDenied = m.notificationsDenied
        s.emailOptIn = m.emailOptIn
        s.premium = m.premium
        s.disabledCategories = m.disabledCategories
        s.signedUpAt = m.hasSignedUpAt ? Timestamp(millisecondsSinceEpoch: m.signedUpAt) : nil
        s.lastOpenAt = m.hasLastOpenAt ? Timestamp(millisecondsSinceEpoch: m.lastOpenAt) : nil
        s.lastActionAt = m.hasLastActionAt ? Timestamp(millisecondsSinceEpoch: m.lastActionAt) : nil
        if m.hasStreak {
            s.streak = Streak(current: Int(m.streak.current), longest: Int(m.streak.longest), lastDay: Int(m.streak.lastDay))
        }
        if m.hasLapse { s.lapse = try Self.lapse(m.lapse) }
        s.lastScore = m.hasLastScore ? Int(m.lastScore) : nil
        s.lastDeliveredCategory = m.hasLastDeliveredCategory ? m.lastDeliveredCategory : nil
        if m.hasSinceOpen { s.sinceOpen = Self.sinceOpen(m.sinceOpen) }
        if m.hasTopPending { s.topPending = try Self.intent(m.topPending, "top_pending") }
        if m.hasDay { s.day = Self.day(m.day) }
        s.recent = m.recent.map { RecentDelivery(type: $0.type, at: Timestamp(millisecondsSinceEpoch: $0.at), bodyHash: $0.bodyHash) }
        s.keyedCaps = m.keyedCaps.map { KeyedCap(type: $0.type, keyHash: $0.keyHash, period: Int($0.period), count: Int($0.count)) }
        s.lifetime = try Self.dictionary(m.lifetime.map { ($0.name, Int($0.count)) }, "lifetime")
        s.dismissals = m.dismissals.map { Dismissal(category: $0.category, at: Timestamp(millisecondsSinceEpoch: $0.at)) }
        s.cooldownUntil = try Self.dictionary(
            m.cooldownUntil.map { ($0.name, Timestamp(millisecondsSinceEpoch: $0.at)) }, "cooldown_until")
        s.pending = try m.pending.enumerated().map { (index, candidate) throws(StateImageError) in
            try Self.candidate(candidate, "pending[\(index)]")
        }
        s.lapseDueAt = m.hasLapseDueAt ? Timestamp(millisecondsSinceEpoch: m.lapseDueAt) : nil
        s.memory = try IdempotencyMemory(packed: [UInt8](m.memory))
        self = s
    }

    // MARK: Parts

    private static func image(of lapse: LapseState) -> Fleet_State_Lapse {
        var m = Fleet_State_Lapse()
        m.fired = UInt32(lapse.fired)
        if let t = lapse.quietSince { m.quietSince = t.millisecondsSinceEpoch }
        if let t = lapse.lastQuietNotificationAt { m.lastQuietNotificationAt = t.millisecondsSinceEpoch }
        if let t = lapse.valueReminderAt { m.valueReminderAt = t.millisecondsSinceEpoch }
        m.noActionFired = lapse.noActionFired
        if let id = lapse.tierNotificationId { m.tierNotificationID = id }
        if let kind = lapse.tierKind { m.tierKind = kind }
        return m
    }

    private static func lapse(_ m: Fleet_State_Lapse) throws(StateImageError) -> LapseState {
        guard let fired = UInt8(exactly: m.fired) else { throw StateImageError("lapse.fired: \(m.fired) is not 0–255") }
        var lapse = LapseState()
        lapse.fired = fired
        lapse.quietSince = m.hasQuietSince ? Timestamp(millisecondsSinceEpoch: m.quietSince) : nil
        lapse.lastQuietNotificationAt = m.hasLastQuietNotificationAt ? Timestamp(millisecondsSinceEpoch: m.lastQuietNotificationAt) : nil
        lapse.valueReminderAt = m.hasValueReminderAt ? Timestamp(millisecondsSinceEpoch: m.valueReminderAt) : nil
        lapse.noActionFired = m.noActionFired
        lapse.tierNotificationId = m.hasTierNotificationID ? m.tierNotificationID : nil
        lapse.tierKind = m.hasTierKind ? m.tierKind : nil
        return lapse
    }

    private static func image(of totals: SinceOpenTotals) -> Fleet_State_SinceOpen {
        var m = Fleet_State_SinceOpen()
        if let v = totals.scoreOld { m.scoreOld = Int64(v) }
        if let v = totals.scoreNew { m.scoreNew = Int64(v) }
        m.dedup = Int64(totals.dedup)
        m.access = Int64(totals.access)
        m.enrichment = Int64(totals.enrichment)
        m.birthdayDays = totals.birthdayDays.map(Int64.init)
        m.reminders = Int64(totals.reminders)
        m.newContacts = Int64(totals.newContacts)
        return m
    }

    private static func sinceOpen(_ m: Fleet_State_SinceOpen) -> SinceOpenTotals {
        var totals = SinceOpenTotals()
        totals.scoreOld = m.hasScoreOld ? Int(m.scoreOld) : nil
        totals.scoreNew = m.hasScoreNew ? Int(m.scoreNew) : nil
        totals.dedup = Int(m.dedup)
        totals.access = Int(m.access)
        totals.enrichment = Int(m.enrichment)
        totals.birthdayDays = m.birthdayDays.map { Int($0) }
        totals.reminders = Int(m.reminders)
        totals.newContacts = Int(m.newContacts)
        return totals
    }

    private static func image(of day: DayLedger) -> Fleet_State_DayLedger {
        var m = Fleet_State_DayLedger()
        m.day = Int64(day.day)
        m.delivered = Int64(day.delivered)
        m.candidates = Int64(day.candidates)
        m.byType = day.byType.sorted { $0.key < $1.key }.map { entry in .with { $0.name = entry.key; $0.count = Int64(entry.value) } }
        m.dayOne = day.dayOne.map(Int64.init)
        m.heldBack = day.heldBack
        return m
    }

    private static func day(_ m: Fleet_State_DayLedger) -> DayLedger {
        var day = DayLedger(day: Int(m.day))
        day.delivered = Int(m.delivered)
        day.candidates = Int(m.candidates)
        // Duplicate names cannot come from `image(of:)`; the last one wins, as in JSON.
        for entry in m.byType { day.byType[entry.name] = Int(entry.count) }
        day.dayOne = m.dayOne.map { Int($0) }
        day.heldBack = m.heldBack
        return day
    }

    private static func image(of intent: PendingIntent) throws(StateImageError) -> Fleet_State_PendingIntent {
        var m = Fleet_State_PendingIntent()
        m.id = intent.id
        m.type = intent.type
        if !intent.data.isEmpty {
            do {
                m.data = Data(try CanonicalJSONEncoder.encode(intent.data))
            } catch {
                throw StateImageError("pending intent \(RecordError.quote(intent.id)): data did not encode: \(error)")
            }
        }
        if let t = intent.expiresAt { m.expiresAt = t.millisecondsSinceEpoch }
        m.arrivedAt = intent.arrivedAt.millisecondsSinceEpoch
        return m
    }

    private static func intent(_ m: Fleet_State_PendingIntent, _ field: String) throws(StateImageError) -> PendingIntent {
        let data = m.data.isEmpty ? [:] : try StateImageFormat.jsonObject([UInt8](m.data), "\(field).data")
        return PendingIntent(
            id: m.id, type: m.type, data: data, expiresAt: m.hasExpiresAt ? Timestamp(millisecondsSinceEpoch: m.expiresAt) : nil,
            arrivedAt: Timestamp(millisecondsSinceEpoch: m.arrivedAt))
    }

    private static func image(of candidate: Candidate) throws(StateImageError) -> Fleet_State_Candidate {
        var m = Fleet_State_Candidate()
        m.kind = switch candidate.kind {
        case .intents: .intents
        case .digest: .digest
        case .lapsedSummary: .lapsedSummary
        case .topPending: .topPending
        case .valueReminder: .valueReminder
        case .dormantEmail: .dormantEmail
        }
        m.phase = switch candidate.phase {
        case .collecting: .collecting
        case .deferred: .deferred
        case .scheduled: .scheduled
        }
        m.category = candidate.category
        m.notificationID = candidate.notificationId
        m.firstArrival = candidate.firstArrival.millisecondsSinceEpoch
        m.dueAt = candidate.dueAt.millisecondsSinceEpoch
        if let until = candidate.until { m.until = until.millisecondsSinceEpoch }
        m.intents = try candidate.intents.map { intent throws(StateImageError) in try image(of: intent) }
        m.summarised = candidate.summarised
        return m
    }

    private static func candidate(_ m: Fleet_State_Candidate, _ field: String) throws(StateImageError) -> Candidate {
        let kind: Candidate.Kind
        switch m.kind {
        case .intents: kind = .intents
        case .digest: kind = .digest
        case .lapsedSummary: kind = .lapsedSummary
        case .topPending: kind = .topPending
        case .valueReminder: kind = .valueReminder
        case .dormantEmail: kind = .dormantEmail
        case .unspecified, .UNRECOGNIZED:
            throw StateImageError("\(field).kind: \(m.kind.rawValue) is not a candidate kind")
        }
        let phase: Candidate.Phase
        switch m.phase {
        case .collecting: phase = .collecting
        case .deferred: phase = .deferred
        case .scheduled: phase = .scheduled
        case .unspecified, .UNRECOGNIZED:
            throw StateImageError("\(field).phase: \(m.phase.rawValue) is not a candidate phase")
        }
        var candidate = Candidate(
            kind: kind, phase: phase, category: m.category, notificationId: m.notificationID,
            firstArrival: Timestamp(millisecondsSinceEpoch: m.firstArrival), dueAt: Timestamp(millisecondsSinceEpoch: m.dueAt))
        candidate.until = m.hasUntil ? Timestamp(millisecondsSinceEpoch: m.until) : nil
        candidate.intents = try m.intents.enumerated().map { (index, intent) throws(StateImageError) in
            try Self.intent(intent, "\(field).intents[\(index)]")
        }
        candidate.summarised = m.summarised
        return candidate
    }

    /// A dictionary from sorted entries; a repeated name is refused (`image(of:)` never writes one).
    private static func dictionary<Value>(_ entries: [(String, Value)], _ field: String) throws(StateImageError) -> [String: Value] {
        var result: [String: Value] = [:]
        result.reserveCapacity(entries.count)
        for (name, value) in entries {
            guard result.updateValue(value, forKey: name) == nil else {
                throw StateImageError("\(field): \(RecordError.quote(name)) appears twice")
            }
        }
        return result
    }
}
