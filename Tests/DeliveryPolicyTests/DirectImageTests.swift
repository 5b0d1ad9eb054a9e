@testable import DeliveryPolicy
import FleetModel
import FleetTestSupport
import Foundation
import PropertyBased
import StateImages
import SwiftProtobuf
import Testing

/// `DeliveryState.binaryImage()` writes the wire format itself (`ProtobufWireWriter`); these
/// tests hold it to the bytes SwiftProtobuf's generated `Fleet_State_DeliveryState` serialises
/// for the same state, built field by field as the image was built before (the reference
/// below). Byte equality, not just a round trip: a re-run, a restore and a replay compare
/// images byte for byte (DESIGN.md principle 3), and images written by earlier builds must
/// compare equal to this build's for the same state.
@Suite struct DirectImageTests {
    @Test("engine states: the direct image is byte for byte the generated message's serialisation")
    func engineStates() async {
        let checked = StatesChecked()
        await propertyCheck(count: 100, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            for state in StateImageTests.states(seed: seed) {
                let image = try state.binaryImage(), reference = try state.referenceImage()
                #expect(image == reference, "seed \(seed)")
            }
            checked.add(1)
        }
        #expect(checked.value == 100)
    }

    @Test("every field at its edges: zero, negative, empty, present-but-zero, long enough for multi-byte lengths")
    func edgeStates() async {
        await propertyCheck(count: 400, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var random = SplitMix64(seed: seed)
            let state = Self.edgeState(&random)
            let image = try state.binaryImage(), reference = try state.referenceImage()
            #expect(image == reference, "seed \(seed)")
            let back = try DeliveryState(binaryImage: image)
            #expect(back == state, "seed \(seed): round trip")
        }
    }

    /// A state whose every field is drawn from its edge values (nil, zero, negative, empty,
    /// short, longer than 127 and 16 383 bytes), with the lists from empty to several.
    static func edgeState(_ r: inout SplitMix64) -> DeliveryState {
        func coin() -> Bool { Bool.random(using: &r) }
        func int() -> Int {
            [0, 1, -1, 63, 64, -65, 127, 128, 300, Int(Int32.max), Int(Int32.min), Int.max, Int.min][Int.random(in: 0...12, using: &r)]
        }
        func time() -> Timestamp {
            Timestamp(millisecondsSinceEpoch: [0, 1, -1, 1_770_000_000_000, -62_135_596_800_000, 253_402_300_799_999][Int.random(in: 0...5, using: &r)])
        }
        func text() -> String {
            ["", "a", "Zoë 😀", String(repeating: "x", count: 127), String(repeating: "y", count: 128), String(repeating: "z", count: 16_400)][
                Int.random(in: 0...5, using: &r)]
        }
        func count() -> Int { [0, 0, 1, 2, 5][Int.random(in: 0...4, using: &r)] }
        func maybe<T>(_ make: () -> T) -> T? { coin() ? make() : nil }
        func intent() -> PendingIntent {
            let data: JSONObject = coin() ? [:] : ["k": .string(text()), "n": .int(Int64(int()))]
            return PendingIntent(id: text(), type: text(), data: data, expiresAt: maybe(time), arrivedAt: time())
        }

        var s = DeliveryState()
        s.zone = coin() ? nil : Zone(identifier: ["UTC", "Europe/Lisbon", "America/New_York"][Int.random(in: 0...2, using: &r)])
        if coin() {
            s.quietHours = QuietHours(
                start: LocalTimeOfDay(hour: Int.random(in: 0...23, using: &r), minute: Int.random(in: 0...59, using: &r)),
                end: LocalTimeOfDay(hour: coin() ? 0 : 23, minute: coin() ? 0 : 59))
        }
        s.pushEnabled = coin()
        s.notificationsDenied = coin()
        s.emailOptIn = coin()
        s.premium = coin()
        s.disabledCategories = (0..<count()).map { _ in text() }
        s.signedUpAt = maybe(time)
        s.lastOpenAt = maybe(time)
        s.lastActionAt = maybe(time)
        s.streak = maybe { Streak(current: int(), longest: int(), lastDay: int()) }
        if coin() {
            var lapse = LapseState()
            lapse.fired = UInt8.random(in: 0...255, using: &r)
            lapse.quietSince = maybe(time)
            lapse.lastQuietNotificationAt = maybe(time)
            lapse.valueReminderAt = maybe(time)
            lapse.noActionFired = coin()
            lapse.tierNotificationId = maybe(text)
            lapse.tierKind = maybe(text)
            s.lapse = lapse
        }
        s.lastScore = maybe(int)
        s.lastDeliveredCategory = maybe(text)
        if coin() {
            var totals = SinceOpenTotals()
            totals.scoreOld = maybe(int)
            totals.scoreNew = maybe(int)
            totals.dedup = int()
            totals.access = int()
            totals.enrichment = int()
            totals.birthdayDays = (0..<(coin() ? count() : 40)).map { _ in int() }
            totals.reminders = int()
            totals.newContacts = int()
            s.sinceOpen = totals
        }
        s.topPending = maybe(intent)
        if coin() {
            var day = DayLedger(day: int())
            day.delivered = int()
            day.candidates = int()
            for _ in 0..<count() { day.byType[text()] = int() }
            day.dayOne = (0..<count()).map { _ in int() }
            day.heldBack = (0..<count()).map { _ in text() }
            s.day = day
        }
        s.recent = (0..<count()).map { _ in RecentDelivery(type: text(), at: time(), bodyHash: coin() ? 0 : r.next()) }
        s.keyedCaps = (0..<count()).map { _ in KeyedCap(type: text(), keyHash: coin() ? 0 : r.next(), period: int(), count: int()) }
        for _ in 0..<count() { s.lifetime[text()] = int() }
        s.dismissals = (0..<count()).map { _ in Dismissal(category: text(), at: time()) }
        for _ in 0..<count() { s.cooldownUntil[text()] = time() }
        let kinds: [Candidate.Kind] = [.intents, .digest, .lapsedSummary, .topPending, .valueReminder, .dormantEmail]
        let phases: [Candidate.Phase] = [.collecting, .deferred, .scheduled]
        s.pending = (0..<count()).map { _ in
            var c = Candidate(
                kind: kinds[Int.random(in: 0...5, using: &r)], phase: phases[Int.random(in: 0...2, using: &r)], category: text(),
                notificationId: text(), firstArrival: time(), dueAt: time())
            c.until = maybe(time)
            c.intents = (0..<count()).map { _ in intent() }
            c.summarised = (0..<count()).map { _ in text() }
            return c
        }
        s.lapseDueAt = maybe(time)
        for k in 0..<(coin() ? count() : 20) {
            s.memory.remember(hash: coin() ? 0 : r.next(), at: Timestamp(millisecondsSinceEpoch: 1_770_000_000_000 + Int64(k) * 60_000))
        }
        return s
    }
}

/// The image as the builds before `ProtobufWireWriter` wrote it: the generated message, filled
/// field by field, serialised by SwiftProtobuf.
extension DeliveryState {
    func referenceImage() throws(StateImageError) -> [UInt8] {
        var m = Fleet_State_DeliveryState()
        m.format = DeliveryState.stateImageFormat
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
        if !lapse.isEmpty { m.lapse = Self.referenceImage(of: lapse) }
        if let lastScore { m.lastScore = Int64(lastScore) }
        if let lastDeliveredCategory { m.lastDeliveredCategory = lastDeliveredCategory }
        if !sinceOpen.isEmpty { m.sinceOpen = Self.referenceImage(of: sinceOpen) }
        if let topPending { m.topPending = try Self.referenceImage(of: topPending) }
        if let day { m.day = Self.referenceImage(of: day) }
        m.recent = recent.map { r in .with { $0.type = r.type; $0.at = r.at.millisecondsSinceEpoch; $0.bodyHash = r.bodyHash } }
        m.keyedCaps = keyedCaps.map { c in
            .with { $0.type = c.type; $0.keyHash = c.keyHash; $0.period = Int64(c.period); $0.count = Int64(c.count) }
        }
        m.lifetime = lifetime.sorted { $0.key < $1.key }.map { entry in .with { $0.name = entry.key; $0.count = Int64(entry.value) } }
        m.dismissals = dismissals.map { d in .with { $0.category = d.category; $0.at = d.at.millisecondsSinceEpoch } }
        m.cooldownUntil = cooldownUntil.sorted { $0.key < $1.key }.map { entry in
            .with { $0.name = entry.key; $0.at = entry.value.millisecondsSinceEpoch }
        }
        m.pending = try pending.map { candidate throws(StateImageError) in try Self.referenceImage(of: candidate) }
        if let lapseDueAt { m.lapseDueAt = lapseDueAt.millisecondsSinceEpoch }
        m.memory = Data(memory.packed())
        do {
            return try m.serializedBytes()
        } catch {
            throw StateImageError("delivery state did not encode: \(error)")
        }
    }

    static func referenceImage(of lapse: LapseState) -> Fleet_State_Lapse {
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

    static func referenceImage(of totals: SinceOpenTotals) -> Fleet_State_SinceOpen {
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

    static func referenceImage(of day: DayLedger) -> Fleet_State_DayLedger {
        var m = Fleet_State_DayLedger()
        m.day = Int64(day.day)
        m.delivered = Int64(day.delivered)
        m.candidates = Int64(day.candidates)
        m.byType = day.byType.sorted { $0.key < $1.key }.map { entry in .with { $0.name = entry.key; $0.count = Int64(entry.value) } }
        m.dayOne = day.dayOne.map(Int64.init)
        m.heldBack = day.heldBack
        return m
    }

    static func referenceImage(of intent: PendingIntent) throws(StateImageError) -> Fleet_State_PendingIntent {
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

    static func referenceImage(of candidate: Candidate) throws(StateImageError) -> Fleet_State_Candidate {
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
        m.intents = try candidate.intents.map { intent throws(StateImageError) in try referenceImage(of: intent) }
        m.summarised = candidate.summarised
        return m
    }

}
