import FleetModel

/// Everything the delivery engine knows about one user: settings, lifecycle, the day's budget,
/// recent deliveries for caps and cool-downs, pending notifications (its timers) and the ids it
/// has already seen.
///
/// The runtime writes it to the `delivery-worker.state` changelog after every change, so the
/// encoding is compact: short keys, defaults and empty collections left out, times as
/// milliseconds (see `DeliveryState.encode(to:)`). An idle user encodes to well under 512 bytes.
public struct DeliveryState: Hashable, Sendable {
    // The fields every step reads or writes live inline. Settings, lifecycle totals and the
    // rarer volume rules live in `cold` (see `ColdState`, DeliveryState+Cold.swift), which
    // forwards them under the same names.
    //
    // Declared in the order the synthesized `==` should compare them: the fold compares each
    // state a step produced with the one it started from (`PartitionFold.keep`), and nearly
    // every step changes it, so the fields most steps change come first and the comparison
    // ends at them. A record remembers its id in `memory` (a count compared, or the same
    // buffer), a timer changes `pending` or the day's ledger. In declaration order, the
    // comparison copied and compared the zone and the day's ledger before reaching either
    // (`Benchmarks/FoldProfile`).

    // P-IDEM-1
    var memory = IdempotencyMemory()

    // Timers
    var pending: [Candidate] = []

    // Volume rules
    var day: DayLedger?
    var recent: [RecentDelivery] = []

    /// The next lapse trigger (§7 tiers, §9.1 no action), cached at the end of every step.
    var lapseDueAt: Timestamp?

    // Settings (user.settings_changed, permission.changed)
    /// The zone the user gave, as given (UTC included); nil until one is given (P-TIME-1: UTC).
    var zone: Zone?
    var pushEnabled = true
    var notificationsDenied = false

    // Lifecycle
    var lastOpenAt: Timestamp?
    var lastActionAt: Timestamp?

    /// What `lapseDueAt` was last computed from; in memory only (see `LapseDueMemo`).
    var lapseDueMemo = LapseDueMemo()
    /// The date of the local day of the last step; in memory only (see `LocalDayMemo`).
    var localDayMemo = LocalDayMemo()

    /// The rarely used fields, copied on write (see `ColdStateBox`).
    var coldBox = ColdStateBox.empty

    public init() {}
}

/// P-EVT-2: consecutive local days with an open.
struct Streak: Codable, Hashable, Sendable {
    var current: Int
    var longest: Int
    var lastDay: Int  // CivilDate.daysSinceEpoch
    enum CodingKeys: String, CodingKey { case current = "c", longest = "l", lastDay = "d" }
}

/// §7: which inactivity tiers fired during the current lapse.
struct LapseState: Codable, Hashable, Sendable {
    enum Tier: UInt8, Sendable { case quietMode = 1, valueReminder = 2, dormant = 4 }
    var fired: UInt8 = 0
    var quietSince: Timestamp?
    var lastQuietNotificationAt: Timestamp?
    var valueReminderAt: Timestamp?
    /// P-LAP-4 "no intentional action for 30 days" already handled for the current gap.
    var noActionFired = false
    /// The tier notification most recently delivered, to tell `14d_summary` / `30d_reminder`
    /// re-engagement from organic (P-LAP-6).
    var tierNotificationId: String?
    var tierKind: String?

    func hasFired(_ tier: Tier) -> Bool { fired & tier.rawValue != 0 }
    mutating func mark(_ tier: Tier) { fired |= tier.rawValue }
    var isEmpty: Bool { self == LapseState() }

    enum CodingKeys: String, CodingKey {
        case fired = "f", quietSince = "q", lastQuietNotificationAt = "n", valueReminderAt = "v", noActionFired = "a"
        case tierNotificationId = "i", tierKind = "k"
    }

    init() {}

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fired = try c.decodeIfPresent(UInt8.self, forKey: .fired) ?? 0
        quietSince = try c.decodeIfPresent(Millis.self, forKey: .quietSince)?.timestamp
        lastQuietNotificationAt = try c.decodeIfPresent(Millis.self, forKey: .lastQuietNotificationAt)?.timestamp
        valueReminderAt = try c.decodeIfPresent(Millis.self, forKey: .valueReminderAt)?.timestamp
        noActionFired = try c.decodeIfPresent(Bool.self, forKey: .noActionFired) ?? false
        tierNotificationId = try c.decodeIfPresent(String.self, forKey: .tierNotificationId)
        tierKind = try c.decodeIfPresent(String.self, forKey: .tierKind)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if fired != 0 { try c.encode(fired, forKey: .fired) }
        try c.encodeIfPresent(quietSince.map(Millis.init), forKey: .quietSince)
        try c.encodeIfPresent(lastQuietNotificationAt.map(Millis.init), forKey: .lastQuietNotificationAt)
        try c.encodeIfPresent(valueReminderAt.map(Millis.init), forKey: .valueReminderAt)
        if noActionFired { try c.encode(true, forKey: .noActionFired) }
        try c.encodeIfPresent(tierNotificationId, forKey: .tierNotificationId)
        try c.encodeIfPresent(tierKind, forKey: .tierKind)
    }
}

/// P-WB-2: what happened since the last open, delivered or not.
struct SinceOpenTotals: Codable, Hashable, Sendable {
    var scoreOld: Int?
    var scoreNew: Int?
    var dedup = 0
    var access = 0
    var enrichment = 0
    /// Local days (days since epoch) on which birthday reminders fired: the welcome-back line
    /// counts those of the last 7 days ("birthdays this week").
    var birthdayDays: [Int] = []
    var reminders = 0
    var newContacts = 0

    var isEmpty: Bool { self == SinceOpenTotals() }

    enum CodingKeys: String, CodingKey {
        case scoreOld = "so", scoreNew = "sn", dedup = "d", access = "a", enrichment = "e", birthdayDays = "b"
        case reminders = "r", newContacts = "c"
    }

    init() {}

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        scoreOld = try c.decodeIfPresent(Int.self, forKey: .scoreOld)
        scoreNew = try c.decodeIfPresent(Int.self, forKey: .scoreNew)
        dedup = try c.decodeIfPresent(Int.self, forKey: .dedup) ?? 0
        access = try c.decodeIfPresent(Int.self, forKey: .access) ?? 0
        enrichment = try c.decodeIfPresent(Int.self, forKey: .enrichment) ?? 0
        birthdayDays = try c.decodeIfPresent([Int].self, forKey: .birthdayDays) ?? []
        reminders = try c.decodeIfPresent(Int.self, forKey: .reminders) ?? 0
        newContacts = try c.decodeIfPresent(Int.self, forKey: .newContacts) ?? 0
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(scoreOld, forKey: .scoreOld)
        try c.encodeIfPresent(scoreNew, forKey: .scoreNew)
        for (value, key) in [(dedup, CodingKeys.dedup), (access, .access), (enrichment, .enrichment),
                             (reminders, .reminders), (newContacts, .newContacts)] where value != 0 {
            try c.encode(value, forKey: key)
        }
        if !birthdayDays.isEmpty { try c.encode(birthdayDays, forKey: .birthdayDays) }
    }
}

/// The current local day's counts (P-BUD-1, P-BUD-5, P-BUD-6, per-day caps).
struct DayLedger: Codable, Hashable, Sendable {
    var day: Int  // CivilDate.daysSinceEpoch
    var delivered = 0
    /// Non-security intents that arrived this day (P-BUD-5 threshold).
    var candidates = 0
    var byType: [String: Int] = [:]
    /// Deliveries per `day_one.limits` entry.
    var dayOne: [Int] = []
    /// Intents held back by volume rules before the digest threshold was crossed.
    var heldBack: [String] = []

    enum CodingKeys: String, CodingKey {
        case day = "d", delivered = "n", candidates = "c", byType = "t", dayOne = "o", heldBack = "h"
    }

    init(day: Int) { self.day = day }

    /// `change(&self)`, so that `state.day?.apply(change)` changes the ledger in place.
    mutating func apply(_ change: (inout DayLedger) -> Void) { change(&self) }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        day = try c.decode(Int.self, forKey: .day)
        delivered = try c.decodeIfPresent(Int.self, forKey: .delivered) ?? 0
        candidates = try c.decodeIfPresent(Int.self, forKey: .candidates) ?? 0
        byType = try c.decodeIfPresent([String: Int].self, forKey: .byType) ?? [:]
        dayOne = try c.decodeIfPresent([Int].self, forKey: .dayOne) ?? []
        heldBack = try c.decodeIfPresent([String].self, forKey: .heldBack) ?? []
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(day, forKey: .day)
        if delivered != 0 { try c.encode(delivered, forKey: .delivered) }
        if candidates != 0 { try c.encode(candidates, forKey: .candidates) }
        if !byType.isEmpty { try c.encode(byType, forKey: .byType) }
        if dayOne.contains(where: { $0 != 0 }) { try c.encode(dayOne, forKey: .dayOne) }
        if !heldBack.isEmpty { try c.encode(heldBack, forKey: .heldBack) }
    }
}

/// A non-security push delivered recently: rolling caps, cool-down rate, duplicate content.
struct RecentDelivery: Codable, Hashable, Sendable {
    var type: String
    var at: Timestamp
    var bodyHash: UInt64
    enum CodingKeys: String, CodingKey { case type = "t", at = "a", bodyHash = "h" }

    init(type: String, at: Timestamp, bodyHash: UInt64) { self.type = type; self.at = at; self.bodyHash = bodyHash }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type = try c.decode(String.self, forKey: .type)
        at = try c.decode(Millis.self, forKey: .at).timestamp
        bodyHash = try c.decode(UInt64.self, forKey: .bodyHash)
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encode(Millis(at), forKey: .at)
        try c.encode(bodyHash, forKey: .bodyHash)
    }
}

/// A `caps.per_key` use: `type` was delivered for the key with this hash in `period`
/// (a local year, or 0 for "ever").
struct KeyedCap: Codable, Hashable, Sendable {
    var type: String
    var keyHash: UInt64
    var period: Int
    var count: Int
    enum CodingKeys: String, CodingKey { case type = "t", keyHash = "k", period = "p", count = "n" }
}

/// P-COOL-1 input.
struct Dismissal: Codable, Hashable, Sendable {
    var category: String
    var at: Timestamp
    enum CodingKeys: String, CodingKey { case category = "c", at = "a" }

    init(category: String, at: Timestamp) { self.category = category; self.at = at }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        category = try c.decode(String.self, forKey: .category)
        at = try c.decode(Millis.self, forKey: .at).timestamp
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(category, forKey: .category)
        try c.encode(Millis(at), forKey: .at)
    }
}

/// An intent waiting in a coalescing window or a deferral.
struct PendingIntent: Codable, Hashable, Sendable {
    var id: String
    var type: String
    /// Never changed once the intent is made: `dataSizeBound` is computed from it.
    let data: JSONObject
    var expiresAt: Timestamp?
    var arrivedAt: Timestamp
    /// `ImageSizeBound.json(data)`, computed once when the intent is made. The state's size
    /// bound is taken after every step that changes the state (`binaryImageSizeBound()`), and
    /// walking every pending intent's data each time was a third of it (`Benchmarks/FoldProfile`,
    /// with the bound's lists read in place: 2.646G → 2.555G instructions, −3.4 %). Not part of
    /// the value: it follows from `data`, is never encoded, and takes no part in `==` or hashing.
    private(set) var dataSizeBound: DerivedSize

    enum CodingKeys: String, CodingKey { case id = "i", type = "t", data = "d", expiresAt = "x", arrivedAt = "a" }

    init(id: String, type: String, data: JSONObject, expiresAt: Timestamp?, arrivedAt: Timestamp) {
        self.id = id; self.type = type; self.data = data; self.expiresAt = expiresAt; self.arrivedAt = arrivedAt
        dataSizeBound = DerivedSize(ImageSizeBound.json(data))
    }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try c.decode(String.self, forKey: .id),
            type: try c.decode(String.self, forKey: .type),
            data: try c.decodeIfPresent(JSONObject.self, forKey: .data) ?? [:],
            expiresAt: try c.decodeIfPresent(Millis.self, forKey: .expiresAt)?.timestamp,
            arrivedAt: try c.decode(Millis.self, forKey: .arrivedAt).timestamp)
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(type, forKey: .type)
        if !data.isEmpty { try c.encode(data, forKey: .data) }
        try c.encodeIfPresent(expiresAt.map(Millis.init), forKey: .expiresAt)
        try c.encode(Millis(arrivedAt), forKey: .arrivedAt)
    }
}

/// A notification the engine will decide at `dueAt`: a coalescing window, a deferral to the end
/// of quiet hours, a digest, or a lapse-tier notification. These are the user's timers.
struct Candidate: Codable, Hashable, Sendable {
    enum Kind: String, Codable, Sendable {
        /// Intents of one category (coalescing window, then possibly deferred).
        case intents = "i"
        /// P-BUD-5.
        case digest = "d"
        /// P-LAP-2 summary, or the top pending notification in `top_pending` quiet weeks.
        case lapsedSummary = "s"
        case topPending = "p"
        /// P-LAP-4.
        case valueReminder = "v"
        /// P-LAP-5.
        case dormantEmail = "e"
    }
    enum Phase: String, Codable, Sendable {
        case collecting = "c", deferred = "d", scheduled = "s"
    }

    var kind: Kind
    var phase: Phase
    var category: String
    var notificationId: String
    var firstArrival: Timestamp
    var dueAt: Timestamp
    /// End of the current deferral, as announced in the `deferred` decisions.
    var until: Timestamp?
    var intents: [PendingIntent] = []
    /// Digest: the intents it summarises.
    var summarised: [String] = []

    enum CodingKeys: String, CodingKey {
        case kind = "k", phase = "p", category = "c", notificationId = "n", firstArrival = "f", dueAt = "d", until = "u"
        case intents = "i", summarised = "s"
    }

    init(kind: Kind, phase: Phase, category: String, notificationId: String, firstArrival: Timestamp, dueAt: Timestamp) {
        self.kind = kind; self.phase = phase; self.category = category; self.notificationId = notificationId
        self.firstArrival = firstArrival; self.dueAt = dueAt
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        kind = try c.decode(Kind.self, forKey: .kind)
        phase = try c.decode(Phase.self, forKey: .phase)
        category = try c.decode(String.self, forKey: .category)
        notificationId = try c.decode(String.self, forKey: .notificationId)
        firstArrival = try c.decode(Millis.self, forKey: .firstArrival).timestamp
        dueAt = try c.decode(Millis.self, forKey: .dueAt).timestamp
        until = try c.decodeIfPresent(Millis.self, forKey: .until)?.timestamp
        intents = try c.decodeIfPresent([PendingIntent].self, forKey: .intents) ?? []
        summarised = try c.decodeIfPresent([String].self, forKey: .summarised) ?? []
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(phase, forKey: .phase)
        try c.encode(category, forKey: .category)
        try c.encode(notificationId, forKey: .notificationId)
        try c.encode(Millis(firstArrival), forKey: .firstArrival)
        try c.encode(Millis(dueAt), forKey: .dueAt)
        try c.encodeIfPresent(until.map(Millis.init), forKey: .until)
        if !intents.isEmpty { try c.encode(intents, forKey: .intents) }
        if !summarised.isEmpty { try c.encode(summarised, forKey: .summarised) }
    }
}

/// A time stored as integer milliseconds: half the bytes of RFC 3339 in the changelog.
struct Millis: Codable, Hashable, Sendable {
    var value: Int64
    init(_ t: Timestamp) { value = t.millisecondsSinceEpoch }
    var timestamp: Timestamp { Timestamp(millisecondsSinceEpoch: value) }
    init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int64.self) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(value)
    }
}

/// A size that follows from a value's other fields (`PendingIntent.dataSizeBound`): kept beside
/// them, equal whatever it holds, so that it changes neither `==` nor hashing.
struct DerivedSize: Hashable, Sendable {
    let value: Int
    init(_ value: Int) { self.value = value }
    static func == (a: DerivedSize, b: DerivedSize) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// The inputs `lapseDueAt` was last computed from, and the profile it was computed with.
///
/// Why: computing the next lapse trigger takes several zone conversions, and it was redone at
/// the end of every step although only opens, actions, zone changes and fired tiers move it.
/// When neither the inputs nor the profile changed, the cached `lapseDueAt` is exactly what a
/// recomputation would give, so the step keeps it. Not part of the state's value: it is never
/// encoded (a decoded state starts without it and recomputes, as before), and it takes no part
/// in `==` or hashing.
struct LapseDueMemo: Hashable, Sendable {
    /// Times as milliseconds (`Int64.min` for none: no RFC 3339 time lies that far back) and the
    /// zone by identifier: compared field by field, this costs a few instructions, where the
    /// synthesised comparison of the optionals went through generic witness calls every step.
    struct Inputs: Sendable {
        var lastOpenAt: Int64
        var lastActionAt: Int64
        var zone: String
        var fired: UInt8
        var noActionFired: Bool

        /// `borrowing`: an initializer takes its arguments owned, and with the cold fields behind
        /// a reference the optimiser no longer picked the five fields out of the state, so it
        /// copied the whole state (twice) at the end of every step to make this call.
        init(_ state: borrowing DeliveryState) {
            lastOpenAt = state.lastOpenAt?.millisecondsSinceEpoch ?? .min
            lastActionAt = state.lastActionAt?.millisecondsSinceEpoch ?? .min
            zone = state.zone?.identifier ?? ""
            fired = state.lapse.fired
            noActionFired = state.lapse.noActionFired
        }

        func matches(_ other: Inputs) -> Bool {
            lastOpenAt == other.lastOpenAt && lastActionAt == other.lastActionAt && fired == other.fired
                && noActionFired == other.noActionFired && zone == other.zone
        }
    }

    private var inputs: Inputs?
    private var profile: PreparedProfile?
    /// The "no intentional action" trigger (§9.1) computed from `inputs`, kept apart from the
    /// minimum in `lapseDueAt`: an open changes only the last open, and the trigger depends on
    /// the last action, the zone and whether it fired, so most recomputations can reuse it and
    /// skip its zone conversions (a local date and a start of day).
    private var noActionDue: Timestamp?

    /// Whether `lapseDueAt` was computed from `inputs` with `profile`.
    func holds(_ inputs: Inputs, _ profile: PreparedProfile) -> Bool {
        guard self.profile === profile, let known = self.inputs else { return false }
        return known.matches(inputs)
    }

    /// The no-action trigger recorded with the last inputs, when what it depends on is the
    /// same in `inputs` (`known` false otherwise: the caller computes it).
    func noActionTrigger(for inputs: Inputs, _ profile: PreparedProfile) -> (known: Bool, due: Timestamp?) {
        guard self.profile === profile, let known = self.inputs, known.lastActionAt == inputs.lastActionAt,
              known.noActionFired == inputs.noActionFired, known.zone == inputs.zone
        else { return (false, nil) }
        return (true, noActionDue)
    }

    mutating func record(_ inputs: Inputs, _ profile: PreparedProfile, noActionDue: Timestamp?) {
        self.inputs = inputs
        self.profile = profile
        self.noActionDue = noActionDue
    }

    static func == (a: LapseDueMemo, b: LapseDueMemo) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
