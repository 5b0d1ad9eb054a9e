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

    /// Written field by field (`ProtobufWireWriter`), the bytes `Fleet_State_DeliveryState`'s
    /// `serializedBytes()` gives for the same state (`DirectImageTests`), in field-number order.
    public func binaryImage() throws(StateImageError) -> [UInt8] {
        var w = ProtobufWireWriter(capacity: 256)
        w.uint32(1, Self.stateImageFormat)
        w.string(2, zone?.identifier ?? "")
        if let quietHours {
            w.delimited(3) { m in
                m.uint32(1, UInt32(quietHours.start.minuteOfDay))
                m.uint32(2, UInt32(quietHours.end.minuteOfDay))
            }
        }
        w.bool(4, !pushEnabled)
        w.bool(5, notificationsDenied)
        w.bool(6, emailOptIn)
        w.bool(7, premium)
        w.repeatedString(8, disabledCategories)
        w.optionalSInt64(9, signedUpAt?.millisecondsSinceEpoch)
        w.optionalSInt64(10, lastOpenAt?.millisecondsSinceEpoch)
        w.optionalSInt64(11, lastActionAt?.millisecondsSinceEpoch)
        if let streak {
            w.delimited(12) { m in
                m.sint64(1, Int64(streak.current))
                m.sint64(2, Int64(streak.longest))
                m.sint64(3, Int64(streak.lastDay))
            }
        }
        if !lapse.isEmpty { Self.write(lapse, as: 13, into: &w) }
        w.optionalSInt64(14, lastScore.map(Int64.init))
        w.optionalString(15, lastDeliveredCategory)
        if !sinceOpen.isEmpty { Self.write(sinceOpen, as: 16, into: &w) }
        if let topPending { try Self.write(topPending, as: 17, into: &w) }
        if let day { Self.write(day, as: 18, into: &w) }
        for r in recent {
            w.delimited(19) { m in
                m.string(1, r.type)
                m.sint64(2, r.at.millisecondsSinceEpoch)
                m.fixed64(3, r.bodyHash)
            }
        }
        for c in keyedCaps {
            w.delimited(20) { m in
                m.string(1, c.type)
                m.fixed64(2, c.keyHash)
                m.sint64(3, Int64(c.period))
                m.sint64(4, Int64(c.count))
            }
        }
        Self.writeNamed(lifetime, as: 21, into: &w) { Int64($0) }
        for d in dismissals {
            w.delimited(22) { m in
                m.string(1, d.category)
                m.sint64(2, d.at.millisecondsSinceEpoch)
            }
        }
        Self.writeNamed(cooldownUntil, as: 23, into: &w) { $0.millisecondsSinceEpoch }
        for candidate in pending { try Self.write(candidate, as: 24, into: &w) }
        w.optionalSInt64(25, lapseDueAt?.millisecondsSinceEpoch)
        if !memory.isEmpty { w.delimited(26) { memory.writePacked(into: &$0) } }
        return w.bytes
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

    /// A dictionary as `NamedCount` or `NamedTime` entries (name 1, value 2), sorted by name:
    /// the schema has no `map` fields, so one state always gives one image.
    private static func writeNamed<Value>(
        _ entries: [String: Value], as field: UInt32, into w: inout ProtobufWireWriter, _ number: (Value) -> Int64
    ) {
        for entry in entries.sorted(by: { $0.key < $1.key }) {
            w.delimited(field) { m in
                m.string(1, entry.key)
                m.sint64(2, number(entry.value))
            }
        }
    }

    private static func write(_ lapse: LapseState, as field: UInt32, into w: inout ProtobufWireWriter) {
        w.delimited(field) { m in
            m.uint32(1, UInt32(lapse.fired))
            m.optionalSInt64(2, lapse.quietSince?.millisecondsSinceEpoch)
            m.optionalSInt64(3, lapse.lastQuietNotificationAt?.millisecondsSinceEpoch)
            m.optionalSInt64(4, lapse.valueReminderAt?.millisecondsSinceEpoch)
            m.bool(5, lapse.noActionFired)
            m.optionalString(6, lapse.tierNotificationId)
            m.optionalString(7, lapse.tierKind)
        }
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

    private static func write(_ totals: SinceOpenTotals, as field: UInt32, into w: inout ProtobufWireWriter) {
        w.delimited(field) { m in
            m.optionalSInt64(1, totals.scoreOld.map(Int64.init))
            m.optionalSInt64(2, totals.scoreNew.map(Int64.init))
            m.sint64(3, Int64(totals.dedup))
            m.sint64(4, Int64(totals.access))
            m.sint64(5, Int64(totals.enrichment))
            m.packedSInt64(6, totals.birthdayDays)
            m.sint64(7, Int64(totals.reminders))
            m.sint64(8, Int64(totals.newContacts))
        }
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

    private static func write(_ day: DayLedger, as field: UInt32, into w: inout ProtobufWireWriter) {
        w.delimited(field) { m in
            m.sint64(1, Int64(day.day))
            m.sint64(2, Int64(day.delivered))
            m.sint64(3, Int64(day.candidates))
            writeNamed(day.byType, as: 4, into: &m) { Int64($0) }
            m.packedSInt64(5, day.dayOne)
            m.repeatedString(6, day.heldBack)
        }
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

    private static func write(_ intent: PendingIntent, as field: UInt32, into w: inout ProtobufWireWriter) throws(StateImageError) {
        try w.delimited(field) { (m: inout ProtobufWireWriter) throws(StateImageError) in
            m.string(1, intent.id)
            m.string(2, intent.type)
            if !intent.data.isEmpty {
                do {
                    m.bytesField(3, try CanonicalJSONEncoder.encode(intent.data))
                } catch {
                    throw StateImageError("pending intent \(RecordError.quote(intent.id)): data did not encode: \(error)")
                }
            }
            m.optionalSInt64(4, intent.expiresAt?.millisecondsSinceEpoch)
            m.sint64(5, intent.arrivedAt.millisecondsSinceEpoch)
        }
    }

    private static func intent(_ m: Fleet_State_PendingIntent, _ field: String) throws(StateImageError) -> PendingIntent {
        let data = m.data.isEmpty ? [:] : try StateImageFormat.jsonObject([UInt8](m.data), "\(field).data")
        return PendingIntent(
            id: m.id, type: m.type, data: data, expiresAt: m.hasExpiresAt ? Timestamp(millisecondsSinceEpoch: m.expiresAt) : nil,
            arrivedAt: Timestamp(millisecondsSinceEpoch: m.arrivedAt))
    }

    private static func write(_ candidate: Candidate, as field: UInt32, into w: inout ProtobufWireWriter) throws(StateImageError) {
        let kind: Fleet_State_Candidate.Kind = switch candidate.kind {
        case .intents: .intents
        case .digest: .digest
        case .lapsedSummary: .lapsedSummary
        case .topPending: .topPending
        case .valueReminder: .valueReminder
        case .dormantEmail: .dormantEmail
        }
        let phase: Fleet_State_Candidate.Phase = switch candidate.phase {
        case .collecting: .collecting
        case .deferred: .deferred
        case .scheduled: .scheduled
        }
        try w.delimited(field) { (m: inout ProtobufWireWriter) throws(StateImageError) in
            m.uint32(1, UInt32(kind.rawValue))
            m.uint32(2, UInt32(phase.rawValue))
            m.string(3, candidate.category)
            m.string(4, candidate.notificationId)
            m.sint64(5, candidate.firstArrival.millisecondsSinceEpoch)
            m.sint64(6, candidate.dueAt.millisecondsSinceEpoch)
            m.optionalSInt64(7, candidate.until?.millisecondsSinceEpoch)
            for intent in candidate.intents { try write(intent, as: 8, into: &m) }
            m.repeatedString(9, candidate.summarised)
        }
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
