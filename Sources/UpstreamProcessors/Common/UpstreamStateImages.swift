import Foundation
public import FleetModel
import StateImages
import SwiftProtobuf

// The upstream workers' binary state images (Protos/fleet_state.proto): what the score, sync,
// access and reminder workers write to their changelogs and histories. Each mapping is exact
// (a decoded image equals the state that wrote it) and refuses, never traps on, bytes that are
// not an image of a known format.

/// Decodes `bytes` as message `M`, naming `what` in the error.
private func decodeImage<M: SwiftProtobuf.Message>(_: M.Type, _ bytes: [UInt8], _ what: String) throws(StateImageError) -> M {
    do {
        return try M(serializedBytes: bytes)
    } catch {
        throw StateImageError("\(what) image does not decode (\(bytes.count) bytes): \(error)")
    }
}

private func encodeImage(_ message: some SwiftProtobuf.Message, _ what: String) throws(StateImageError) -> [UInt8] {
    do {
        return try message.serializedBytes()
    } catch {
        throw StateImageError("\(what) did not encode: \(error)")
    }
}

private func time(_ millis: Int64) -> Timestamp { Timestamp(millisecondsSinceEpoch: millis) }

extension ScoreState: BinaryStateImage {
    public static let stateImageFormat: UInt32 = 1

    public func binaryImage() throws(StateImageError) -> [UInt8] {
        var m = Fleet_State_ScoreState()
        m.format = Self.stateImageFormat
        if let v = lastScore { m.lastScore = Int64(v) }
        if let v = lastNotifiedScore { m.lastNotifiedScore = Int64(v) }
        if let v = highestLabelFrom { m.highestLabelFrom = Int64(v) }
        m.fallingStreak = Int64(fallingStreak)
        m.decliningRunSignalled = decliningRunSignalled
        if let v = lastBatchId { m.lastBatchID = v }
        if let v = lastComputedAt { m.lastComputedAt = v.millisecondsSinceEpoch }
        return try encodeImage(m, "score state")
    }

    public init(binaryImage bytes: [UInt8]) throws(StateImageError) {
        let m = try decodeImage(Fleet_State_ScoreState.self, bytes, "score state")
        try StateImageFormat.check(m.format, reads: Self.stateImageFormat, of: "score state")
        self.init()
        lastScore = m.hasLastScore ? Int(m.lastScore) : nil
        lastNotifiedScore = m.hasLastNotifiedScore ? Int(m.lastNotifiedScore) : nil
        highestLabelFrom = m.hasHighestLabelFrom ? Int(m.highestLabelFrom) : nil
        fallingStreak = Int(m.fallingStreak)
        decliningRunSignalled = m.decliningRunSignalled
        lastBatchId = m.hasLastBatchID ? m.lastBatchID : nil
        lastComputedAt = m.hasLastComputedAt ? time(m.lastComputedAt) : nil
    }
}

extension SyncState: BinaryStateImage {
    public static let stateImageFormat: UInt32 = 1

    public func binaryImage() throws(StateImageError) -> [UInt8] {
        var m = Fleet_State_SyncState()
        m.format = Self.stateImageFormat
        m.recentSyncIds = recentSyncIds.keys
        m.dedupReminderSent = dedupReminderSent
        return try encodeImage(m, "sync state")
    }

    public init(binaryImage bytes: [UInt8]) throws(StateImageError) {
        let m = try decodeImage(Fleet_State_SyncState.self, bytes, "sync state")
        try StateImageFormat.check(m.format, reads: Self.stateImageFormat, of: "sync state")
        self.init()
        recentSyncIds = RecentKeys(keys: m.recentSyncIds)
        dedupReminderSent = m.dedupReminderSent
    }
}

extension AccessState: BinaryStateImage {
    public static let stateImageFormat: UInt32 = 1

    public func binaryImage() throws(StateImageError) -> [UInt8] {
        var m = Fleet_State_AccessState()
        m.format = Self.stateImageFormat
        m.seen = seen.keys
        return try encodeImage(m, "access state")
    }

    public init(binaryImage bytes: [UInt8]) throws(StateImageError) {
        let m = try decodeImage(Fleet_State_AccessState.self, bytes, "access state")
        try StateImageFormat.check(m.format, reads: Self.stateImageFormat, of: "access state")
        self.init()
        seen = RecentKeys(keys: m.seen)
    }
}

extension ReminderState: BinaryStateImage {
    public static let stateImageFormat: UInt32 = 1

    public func binaryImage() throws(StateImageError) -> [UInt8] {
        var m = Fleet_State_ReminderState()
        m.format = Self.stateImageFormat
        m.reminders = reminders.map(Self.image(of:))
        if let nextWake { m.nextWake = nextWake.millisecondsSinceEpoch }
        return try encodeImage(m, "reminder state")
    }

    public init(binaryImage bytes: [UInt8]) throws(StateImageError) {
        let m = try decodeImage(Fleet_State_ReminderState.self, bytes, "reminder state")
        try StateImageFormat.check(m.format, reads: Self.stateImageFormat, of: "reminder state")
        self.init()
        reminders = try m.reminders.enumerated().map { (index, reminder) throws(StateImageError) in
            try Self.reminder(reminder, "reminders[\(index)]")
        }
        nextWake = m.hasNextWake ? time(m.nextWake) : nil
    }

    private static func image(of local: LocalDateTime) -> Fleet_State_LocalDateTime {
        var m = Fleet_State_LocalDateTime()
        m.year = Int32(clamping: local.date.year)
        m.month = UInt32(clamping: local.date.month)
        m.day = UInt32(clamping: local.date.day)
        m.minute = UInt32(clamping: local.time.minuteOfDay)
        return m
    }

    private static func local(_ m: Fleet_State_LocalDateTime, _ field: String) throws(StateImageError) -> LocalDateTime {
        LocalDateTime(
            date: try StateImageFormat.date(year: m.year, month: m.month, day: m.day, field),
            time: try StateImageFormat.timeOfDay(m.minute, field))
    }

    private static func image(of r: ScheduledReminder) -> Fleet_State_Reminder {
        var m = Fleet_State_Reminder()
        m.reminderID = r.reminderId
        m.kind = switch r.kind {
        case .birthday: .birthday
        case .followup: .followup
        }
        m.contactID = r.contactId
        m.contactName = r.contactName
        if let note = r.note { m.note = note }
        m.zone = r.zone.identifier
        switch r.schedule {
        case .yearly(let birthday, let at):
            m.yearly = .with {
                $0.month = UInt32(clamping: birthday.month); $0.day = UInt32(clamping: birthday.day)
                $0.minute = UInt32(clamping: at.minuteOfDay)
            }
        case .once(let at): m.once = image(of: at)
        case .weekly(let first): m.weekly = image(of: first)
        case .monthly(let first): m.monthly = image(of: first)
        }
        if let next = r.next { m.next = image(of: next) }
        m.nextIndex = Int64(r.nextIndex)
        if let t = r.fireAt { m.fireAt = t.millisecondsSinceEpoch }
        if let t = r.lateUntil { m.lateUntil = t.millisecondsSinceEpoch }
        if let t = r.upcomingAt { m.upcomingAt = t.millisecondsSinceEpoch }
        if let shown = r.upcomingShownFor { m.upcomingShownFor = image(of: shown) }
        if let t = r.upcomingShownUntil { m.upcomingShownUntil = t.millisecondsSinceEpoch }
        if let fired = r.lastFired { m.lastFired = image(of: fired) }
        return m
    }

    private static func reminder(_ m: Fleet_State_Reminder, _ field: String) throws(StateImageError) -> ScheduledReminder {
        let kind: ReminderKind
        switch m.kind {
        case .birthday: kind = .birthday
        case .followup: kind = .followup
        case .unspecified, .UNRECOGNIZED:
            throw StateImageError("\(field).kind: \(m.kind.rawValue) is not a reminder kind")
        }
        guard let zone = try StateImageFormat.zone(m.zone, "\(field).zone") else {
            throw StateImageError("\(field).zone: missing")
        }
        let schedule: ReminderSchedule
        switch m.schedule {
        case .yearly(let yearly):
            guard let birthday = MonthDay(month: Int(yearly.month), day: Int(yearly.day)) else {
                throw StateImageError("\(field).yearly: \(yearly.month)-\(yearly.day) is not a birthday")
            }
            schedule = .yearly(birthday: birthday, time: try StateImageFormat.timeOfDay(yearly.minute, "\(field).yearly.minute"))
        case .once(let at): schedule = .once(at: try local(at, "\(field).once"))
        case .weekly(let first): schedule = .weekly(first: try local(first, "\(field).weekly"))
        case .monthly(let first): schedule = .monthly(first: try local(first, "\(field).monthly"))
        case nil: throw StateImageError("\(field): no schedule")
        }
        return ScheduledReminder(
            reminderId: m.reminderID, kind: kind, contactId: m.contactID, contactName: m.contactName,
            note: m.hasNote ? m.note : nil, zone: zone, schedule: schedule,
            next: m.hasNext ? try local(m.next, "\(field).next") : nil, nextIndex: Int(m.nextIndex),
            fireAt: m.hasFireAt ? time(m.fireAt) : nil, lateUntil: m.hasLateUntil ? time(m.lateUntil) : nil,
            upcomingAt: m.hasUpcomingAt ? time(m.upcomingAt) : nil,
            upcomingShownFor: m.hasUpcomingShownFor ? try local(m.upcomingShownFor, "\(field).upcoming_shown_for") : nil,
            upcomingShownUntil: m.hasUpcomingShownUntil ? time(m.upcomingShownUntil) : nil,
            lastFired: m.hasLastFired ? try local(m.lastFired, "\(field).last_fired") : nil)
    }
}
