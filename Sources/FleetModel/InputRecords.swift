// External input records (DESIGN.md "Topics and records"). Field names follow the JSON
// (`user_id` ↔ `userId`); unknown JSON fields are ignored, missing required ones fail decoding.

// MARK: rin.score.batches

public struct ScoreComputed: RecordPayload {
    public static let typeNames = ["score.computed"]
    public struct Components: Codable, Hashable, Sendable {
        public var quality: Int
        public var position: Int
        public var stability: Int
        public var trust: Int
        public init(quality: Int, position: Int, stability: Int, trust: Int) {
            self.quality = quality; self.position = position; self.stability = stability; self.trust = trust
        }
    }

    public var id: String
    public var userId: String
    public var batchId: String
    public var computedAt: Timestamp
    public var score: Int
    public var components: Components

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", batchId = "batch_id", computedAt = "computed_at", score, components
    }

    public init(id: String, userId: String, batchId: String, computedAt: Timestamp, score: Int, components: Components) {
        self.id = id; self.userId = userId; self.batchId = batchId; self.computedAt = computedAt
        self.score = score; self.components = components
    }

    /// P-SCO-7: scores and every component lie in 0–100.
    public func validate() throws(RecordError) {
        try requireNonEmpty(batchId, "batch_id")
        try requireRange(score, 0...100, "score")
        try requireRange(components.quality, 0...100, "components.quality")
        try requireRange(components.position, 0...100, "components.position")
        try requireRange(components.stability, 0...100, "components.stability")
        try requireRange(components.trust, 0...100, "components.trust")
    }
}

// MARK: rin.contacts.sync-results

public struct ContactsSyncCompleted: RecordPayload {
    public static let typeNames = ["contacts.sync_completed"]
    public struct Enrichment: Codable, Hashable, Sendable {
        public var contactId: String
        public var name: String
        enum CodingKeys: String, CodingKey { case contactId = "contact_id", name }
        public init(contactId: String, name: String) { self.contactId = contactId; self.name = name }
    }
    public struct Conflict: Codable, Hashable, Sendable {
        public var contactId: String
        public var name: String
        public var field: String
        enum CodingKeys: String, CodingKey { case contactId = "contact_id", name, field }
        public init(contactId: String, name: String, field: String) {
            self.contactId = contactId; self.name = name; self.field = field
        }
    }

    public var id: String
    public var userId: String
    public var syncId: String
    public var completedAt: Timestamp
    public var added: Int
    public var updated: Int
    public var removed: Int
    public var autoMerged: Int
    public var newDedupSuggestions: Int
    public var unreviewedDedupSuggestions: Int
    public var oldestUnreviewedDedupAt: Timestamp?
    public var enrichment: [Enrichment]
    public var conflicts: [Conflict]

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", syncId = "sync_id", completedAt = "completed_at", added, updated, removed
        case autoMerged = "auto_merged", newDedupSuggestions = "new_dedup_suggestions"
        case unreviewedDedupSuggestions = "unreviewed_dedup_suggestions"
        case oldestUnreviewedDedupAt = "oldest_unreviewed_dedup_at", enrichment, conflicts
    }

    public init(
        id: String, userId: String, syncId: String, completedAt: Timestamp, added: Int = 0, updated: Int = 0,
        removed: Int = 0, autoMerged: Int = 0, newDedupSuggestions: Int = 0, unreviewedDedupSuggestions: Int = 0,
        oldestUnreviewedDedupAt: Timestamp? = nil, enrichment: [Enrichment] = [], conflicts: [Conflict] = []
    ) {
        self.id = id; self.userId = userId; self.syncId = syncId; self.completedAt = completedAt
        self.added = added; self.updated = updated; self.removed = removed; self.autoMerged = autoMerged
        self.newDedupSuggestions = newDedupSuggestions; self.unreviewedDedupSuggestions = unreviewedDedupSuggestions
        self.oldestUnreviewedDedupAt = oldestUnreviewedDedupAt; self.enrichment = enrichment; self.conflicts = conflicts
    }

    public func validate() throws(RecordError) {
        try requireNonEmpty(syncId, "sync_id")
        for (value, field) in [
            (added, "added"), (updated, "updated"), (removed, "removed"), (autoMerged, "auto_merged"),
            (newDedupSuggestions, "new_dedup_suggestions"), (unreviewedDedupSuggestions, "unreviewed_dedup_suggestions"),
        ] where value < 0 {
            throw RecordError("field '\(field)' is \(value), must be 0 or more")
        }
        for (i, e) in enrichment.enumerated() {
            try requireNonEmpty(e.contactId, "enrichment[\(i)].contact_id")
            try requireNonEmpty(e.name, "enrichment[\(i)].name")
        }
        for (i, c) in conflicts.enumerated() {
            try requireNonEmpty(c.contactId, "conflicts[\(i)].contact_id")
        }
    }
}

// MARK: rin.reminders

public enum ReminderKind: String, Codable, Hashable, Sendable, CaseIterable {
    case birthday, followup
}

public enum Recurrence: String, Codable, Hashable, Sendable, CaseIterable {
    case none, weekly, monthly
}

/// A birthday as `MM-DD` (the year is not known or not needed).
public struct MonthDay: Hashable, Sendable, Codable, CustomStringConvertible {
    public var month: Int
    public var day: Int

    public init?(month: Int, day: Int) {
        guard (1...12).contains(month), day >= 1, day <= CivilDate.daysInMonth(year: 2000, month: month) else { return nil }
        self.month = month; self.day = day
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        let parts = s.split(separator: "-")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
              let m = Int(parts[0]), let d = Int(parts[1]), let md = MonthDay(month: m, day: d)
        else { throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(s)' is not a birthday MM-DD") }
        self = md
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }

    public var description: String {
        (month < 10 ? "0" : "") + String(month) + "-" + (day < 10 ? "0" : "") + String(day)
    }

    /// The date this birthday falls on in `year`: 29 February becomes 28 February in
    /// non-leap years (P-REM-1).
    public func date(in year: Int) -> CivilDate {
        if month == 2 && day == 29 && !CivilDate.isLeapYear(year) { return CivilDate(year: year, month: 2, day: 28) }
        return CivilDate(year: year, month: month, day: day)
    }
}

public struct ReminderUpserted: RecordPayload {
    public static let typeNames = ["reminder.upserted"]
    public var id: String
    public var userId: String
    public var reminderId: String
    public var kind: ReminderKind
    public var contactId: String
    public var contactName: String
    public var timeZone: Zone
    public var birthday: MonthDay?
    public var fireAtLocal: LocalDateTime?
    public var recurrence: Recurrence
    public var note: String?

    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", reminderId = "reminder_id", kind, contactId = "contact_id"
        case contactName = "contact_name", timeZone = "time_zone", birthday, fireAtLocal = "fire_at_local"
        case recurrence, note
    }

    public init(
        id: String, userId: String, reminderId: String, kind: ReminderKind, contactId: String, contactName: String,
        timeZone: Zone, birthday: MonthDay? = nil, fireAtLocal: LocalDateTime? = nil, recurrence: Recurrence = .none,
        note: String? = nil
    ) {
        self.id = id; self.userId = userId; self.reminderId = reminderId; self.kind = kind; self.contactId = contactId
        self.contactName = contactName; self.timeZone = timeZone; self.birthday = birthday
        self.fireAtLocal = fireAtLocal; self.recurrence = recurrence; self.note = note
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        userId = try c.decode(String.self, forKey: .userId)
        reminderId = try c.decode(String.self, forKey: .reminderId)
        kind = try c.decode(ReminderKind.self, forKey: .kind)
        contactId = try c.decode(String.self, forKey: .contactId)
        contactName = try c.decode(String.self, forKey: .contactName)
        timeZone = try c.decode(Zone.self, forKey: .timeZone)
        birthday = try c.decodeIfPresent(MonthDay.self, forKey: .birthday)
        fireAtLocal = try c.decodeIfPresent(LocalDateTime.self, forKey: .fireAtLocal)
        recurrence = try c.decodeIfPresent(Recurrence.self, forKey: .recurrence) ?? .none
        note = try c.decodeIfPresent(String.self, forKey: .note)
    }

    public func validate() throws(RecordError) {
        try requireNonEmpty(reminderId, "reminder_id")
        try requireNonEmpty(contactName, "contact_name")
        switch kind {
        case .birthday:
            if birthday == nil { throw .missing("birthday") }
        case .followup:
            if fireAtLocal == nil { throw .missing("fire_at_local") }
        }
    }
}

public struct ReminderCancelled: RecordPayload {
    public static let typeNames = ["reminder.cancelled"]
    public var id: String
    public var userId: String
    public var reminderId: String
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", reminderId = "reminder_id" }
    public init(id: String, userId: String, reminderId: String) {
        self.id = id; self.userId = userId; self.reminderId = reminderId
    }
    public func validate() throws(RecordError) { try requireNonEmpty(reminderId, "reminder_id") }
}

// MARK: rin.security.access-requests

public struct AccessRequested: RecordPayload {
    public static let typeNames = ["access.requested"]
    public var id: String
    public var userId: String
    public var requestId: String
    public var requesterName: String
    public var field: String
    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", requestId = "request_id", requesterName = "requester_name", field
    }
    public init(id: String, userId: String, requestId: String, requesterName: String, field: String) {
        self.id = id; self.userId = userId; self.requestId = requestId; self.requesterName = requesterName
        self.field = field
    }
    public func validate() throws(RecordError) {
        try requireNonEmpty(requestId, "request_id")
        try requireNonEmpty(requesterName, "requester_name")
        try requireNonEmpty(field, "field")
    }
}

/// `security.new_signin` and `security.suspicious_activity`: same shape, the `type` tells them apart.
public struct SecurityAlert: RecordPayload {
    public static let typeNames = ["security.new_signin", "security.suspicious_activity"]
    public var id: String
    public var userId: String
    public var detail: String
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", detail }
    public init(id: String, userId: String, detail: String) { self.id = id; self.userId = userId; self.detail = detail }
}

// MARK: rin.app.activity

public struct UserSignedUp: RecordPayload {
    public static let typeNames = ["user.signed_up"]
    public var id: String
    public var userId: String
    public var timeZone: Zone
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", timeZone = "time_zone" }
    public init(id: String, userId: String, timeZone: Zone) { self.id = id; self.userId = userId; self.timeZone = timeZone }
}

public enum EntrySource: String, Codable, Hashable, Sendable, CaseIterable {
    case notification, organic, deepLink = "deep_link"
}

public struct AppOpened: RecordPayload {
    public static let typeNames = ["app.opened"]
    public var id: String
    public var userId: String
    public var entrySource: EntrySource
    public var notificationId: String?
    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", entrySource = "entry_source", notificationId = "notification_id"
    }
    public init(id: String, userId: String, entrySource: EntrySource, notificationId: String? = nil) {
        self.id = id; self.userId = userId; self.entrySource = entrySource; self.notificationId = notificationId
    }
}

/// `notification.opened` and `notification.dismissed`.
public struct NotificationInteraction: RecordPayload {
    public static let typeNames = ["notification.opened", "notification.dismissed"]
    public var id: String
    public var userId: String
    public var notificationId: String
    public var category: String
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", notificationId = "notification_id", category }
    public init(id: String, userId: String, notificationId: String, category: String) {
        self.id = id; self.userId = userId; self.notificationId = notificationId; self.category = category
    }
    public func validate() throws(RecordError) { try requireNonEmpty(notificationId, "notification_id") }
}

public struct QuietHours: Codable, Hashable, Sendable {
    public var start: LocalTimeOfDay
    public var end: LocalTimeOfDay
    public init(start: LocalTimeOfDay, end: LocalTimeOfDay) { self.start = start; self.end = end }
}

public struct SettingsChanged: RecordPayload {
    public static let typeNames = ["user.settings_changed"]
    public var id: String
    public var userId: String
    public var timeZone: Zone?
    public var quietHours: QuietHours?
    public var pushEnabled: Bool?
    public var emailOptIn: Bool?
    public var premium: Bool?
    public var disabledCategories: [String]?
    enum CodingKeys: String, CodingKey {
        case id, userId = "user_id", timeZone = "time_zone", quietHours = "quiet_hours", pushEnabled = "push_enabled"
        case emailOptIn = "email_opt_in", premium, disabledCategories = "disabled_categories"
    }
    public init(
        id: String, userId: String, timeZone: Zone? = nil, quietHours: QuietHours? = nil, pushEnabled: Bool? = nil,
        emailOptIn: Bool? = nil, premium: Bool? = nil, disabledCategories: [String]? = nil
    ) {
        self.id = id; self.userId = userId; self.timeZone = timeZone; self.quietHours = quietHours
        self.pushEnabled = pushEnabled; self.emailOptIn = emailOptIn; self.premium = premium
        self.disabledCategories = disabledCategories
    }
}

public enum PermissionKind: String, Codable, Hashable, Sendable, CaseIterable { case notifications, contacts }
public enum PermissionStatus: String, Codable, Hashable, Sendable, CaseIterable { case granted, denied, provisional }

public struct PermissionChanged: RecordPayload {
    public static let typeNames = ["permission.changed"]
    public var id: String
    public var userId: String
    public var permission: PermissionKind
    public var status: PermissionStatus
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", permission, status }
    public init(id: String, userId: String, permission: PermissionKind, status: PermissionStatus) {
        self.id = id; self.userId = userId; self.permission = permission; self.status = status
    }
}

public struct UserAction: RecordPayload {
    public static let typeNames = ["user.action"]
    public var id: String
    public var userId: String
    public var action: String
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", action }
    public init(id: String, userId: String, action: String) { self.id = id; self.userId = userId; self.action = action }
    public func validate() throws(RecordError) { try requireNonEmpty(action, "action") }
}

public struct ScoreViewed: RecordPayload {
    public static let typeNames = ["score.viewed"]
    public var id: String
    public var userId: String
    public var score: Int
    enum CodingKeys: String, CodingKey { case id, userId = "user_id", score }
    public init(id: String, userId: String, score: Int) { self.id = id; self.userId = userId; self.score = score }
    public func validate() throws(RecordError) { try requireRange(score, 0...100, "score") }
}
