import FleetModel

/// The parts of `DeliveryState` that most steps only read, or do not touch at all: settings
/// beyond the zone and push switches, the lifecycle totals and the rarer volume rules.
///
/// Why a box: the engine swaps the whole state into and out of every step, and a ~600-byte
/// state made `memcpy` about 7 % of the engine's time. Behind one reference these fields cost
/// 8 bytes of the inline state; reading them costs a pointer hop, and writing them copies the
/// box only when it is shared (a state that was copied, or the shared empty box of a new
/// state), exactly like the standard library's copy-on-write collections. The value semantics,
/// `==`, hashing and the encoding (DeliveryState+Codable.swift) are unchanged.
struct ColdState: Hashable, Sendable {
    // Settings
    var quietHours: QuietHours?
    var emailOptIn = false
    var premium = false
    var disabledCategories: [String] = []

    // Lifecycle
    var signedUpAt: Timestamp?
    var streak: Streak?
    var lapse = LapseState()
    var lastScore: Int?
    var lastDeliveredCategory: String?
    var sinceOpen = SinceOpenTotals()
    /// The most important notification held back since the last open (quiet week `top_pending`).
    var topPending: PendingIntent?

    // Volume rules
    var keyedCaps: [KeyedCap] = []
    var lifetime: [String: Int] = [:]
    var dismissals: [Dismissal] = []
    var cooldownUntil: [String: Timestamp] = [:]
}

/// The copy-on-write reference holding a state's `ColdState`.
///
/// `@unchecked Sendable`: `fields` is only mutated through `DeliveryState.cold`, which first
/// makes the box uniquely referenced (`isKnownUniquelyReferenced`), so a box reachable from
/// more than one state (or thread) is never written.
final class ColdStateBox: Hashable, @unchecked Sendable {
    /// `@exclusivity(unchecked)`: every read of a cold field goes through this class property,
    /// and the runtime's dynamic exclusivity check (`swift_beginAccess`) cost more than the
    /// smaller state saved. The check is redundant here: the box is only written through a
    /// `mutating` accessor of `DeliveryState` after `isKnownUniquelyReferenced`, so the static
    /// exclusivity of the owning state already rules out overlapping accesses.
    @exclusivity(unchecked) var fields: ColdState

    init(_ fields: ColdState) { self.fields = fields }

    /// Shared by every state whose cold fields are all defaults, so a new state (and the
    /// placeholder a step leaves behind while it owns the state) allocates nothing.
    static let empty = ColdStateBox(ColdState())

    static func == (lhs: ColdStateBox, rhs: ColdStateBox) -> Bool { lhs === rhs || lhs.fields == rhs.fields }
    func hash(into hasher: inout Hasher) { hasher.combine(fields) }
}

extension DeliveryState {
    /// The cold fields; writing through this copies the box first if it is shared.
    var cold: ColdState {
        _read { yield coldBox.fields }
        _modify {
            if !isKnownUniquelyReferenced(&coldBox) { coldBox = ColdStateBox(coldBox.fields) }
            yield &coldBox.fields
        }
    }

    // The cold fields under their own names, so rule code reads `state.sinceOpen` wherever
    // they live. `_modify` (not `set`) lets `state.sinceOpen.dedup += 1` mutate in place.

    var quietHours: QuietHours? {
        get { coldBox.fields.quietHours }
        _modify { yield &cold.quietHours }
    }
    var emailOptIn: Bool {
        get { coldBox.fields.emailOptIn }
        _modify { yield &cold.emailOptIn }
    }
    var premium: Bool {
        get { coldBox.fields.premium }
        _modify { yield &cold.premium }
    }
    var disabledCategories: [String] {
        get { coldBox.fields.disabledCategories }
        _modify { yield &cold.disabledCategories }
    }
    var signedUpAt: Timestamp? {
        get { coldBox.fields.signedUpAt }
        _modify { yield &cold.signedUpAt }
    }
    var streak: Streak? {
        get { coldBox.fields.streak }
        _modify { yield &cold.streak }
    }
    var lapse: LapseState {
        get { coldBox.fields.lapse }
        _modify { yield &cold.lapse }
    }
    var lastScore: Int? {
        get { coldBox.fields.lastScore }
        _modify { yield &cold.lastScore }
    }
    var lastDeliveredCategory: String? {
        get { coldBox.fields.lastDeliveredCategory }
        _modify { yield &cold.lastDeliveredCategory }
    }
    var sinceOpen: SinceOpenTotals {
        get { coldBox.fields.sinceOpen }
        _modify { yield &cold.sinceOpen }
    }
    var topPending: PendingIntent? {
        get { coldBox.fields.topPending }
        _modify { yield &cold.topPending }
    }
    var keyedCaps: [KeyedCap] {
        get { coldBox.fields.keyedCaps }
        _modify { yield &cold.keyedCaps }
    }
    var lifetime: [String: Int] {
        get { coldBox.fields.lifetime }
        _modify { yield &cold.lifetime }
    }
    var dismissals: [Dismissal] {
        get { coldBox.fields.dismissals }
        _modify { yield &cold.dismissals }
    }
    var cooldownUntil: [String: Timestamp] {
        get { coldBox.fields.cooldownUntil }
        _modify { yield &cold.cooldownUntil }
    }
}
