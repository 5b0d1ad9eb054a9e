import FleetModel
import FleetTestSupport
import Foundation

/// One external input record and the log time at which it is processed.
struct TimedInput: Hashable, Sendable {
    var topic: String
    var time: Timestamp
    var record: FleetRecord
}

extension TimedInput {
    /// The input line `fleetctl simulate` reads:
    /// `{"at": "<RFC 3339>", "key": "<user id>", "topic": "<topic>", "value": {<record>}}`.
    var simulationLine: String {
        let at = "\"at\":\"\(time.rfc3339)\""
        let key = "\"key\":" + jsonString(record.userId)
        let topic = "\"topic\":" + jsonString(self.topic)
        return "{\(at),\(key),\(topic),\"value\":\(RecordCodec.encodeString(record))}"
    }

    /// Ids, user ids and topics the generator writes need no escaping beyond quotes and
    /// backslashes, which this handles.
    private func jsonString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// The user segments of the retention spec §2.1, with their expected return cadence.
enum Segment: String, CaseIterable, Sendable {
    /// 3–5 opens per week: CRM note-takers, active circle managers.
    case power
    /// 1–2 opens per week.
    case regular
    /// 2–4 opens per month.
    case casual
}

/// A simulated user and how they behave.
struct SimulatedUser: Hashable, Sendable {
    var id: String
    var segment: Segment
    var zone: Zone
    /// No opens from this day on (a lapse that never ends within the simulation), if any.
    var stopsOpeningOnDay: Int?
    /// Days without opens in the middle of the simulation (a lapse that ends), if any.
    var awayDays: Range<Int>?
}

/// A deterministic generator of external input records for a few users of each segment over
/// simulated days (retention spec §2.1): sign-ups, opens, intentional actions, daily score
/// batches, background syncs, reminders and access requests, on the topics the fleet reads.
///
/// The same seed gives the same records, byte for byte. Every user signs up on day 0; the
/// first casual user never opens again (reaching the 14-, 30- and 60-day tiers) and the second
/// regular user is away for days 20–41 (entering and leaving quiet mode), so the tier and quiet
/// mode invariants have something to check.
struct SegmentTraffic: Sendable {
    var users: [SimulatedUser]
    /// Sorted by time; records at the same time keep their generation order.
    var inputs: [TimedInput]
    var start: Timestamp
    var days: Int

    /// The whole input as `fleetctl simulate` JSONL, one record per line.
    var jsonLines: String { inputs.map(\.simulationLine).joined(separator: "\n") + "\n" }

    static let zones = ["America/New_York", "Europe/Berlin", "Asia/Tokyo", "Australia/Sydney", "America/Los_Angeles", "Europe/London"]

    init(seed: UInt64 = 1, usersPerSegment: Int = 3, days: Int = 60, start: Timestamp = Timestamp(secondsSinceEpoch: 1_772_323_200)) {
        self.start = start
        self.days = days
        var rng = SplitMix64(seed: seed)
        var users: [SimulatedUser] = []
        for segment in Segment.allCases {
            for n in 1...usersPerSegment {
                let zoneId = Self.zones[(users.count * 5 + n) % Self.zones.count]
                users.append(SimulatedUser(
                    id: "\(segment.rawValue)-\(n)", segment: segment, zone: Zone(identifier: zoneId) ?? .utc,
                    stopsOpeningOnDay: segment == .casual && n == 1 ? 1 : nil,
                    awayDays: segment == .regular && n == 2 ? 20..<42 : nil))
            }
        }
        var generated: [TimedInput] = []
        for user in users {
            var builder = UserTraffic(user: user, start: start, days: days, rng: rng.split())
            generated += builder.records()
        }
        self.users = users
        self.inputs = generated.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    }
}

/// The records of one simulated user.
private struct UserTraffic {
    let user: SimulatedUser
    let start: Timestamp
    let days: Int
    var rng: SplitMix64
    var out: [TimedInput] = []
    var counter = 0

    init(user: SimulatedUser, start: Timestamp, days: Int, rng: SplitMix64) {
        self.user = user; self.start = start; self.days = days; self.rng = rng
    }

    mutating func nextId(_ kind: String) -> String {
        counter += 1
        return "\(user.id)-\(kind)-\(counter)"
    }

    /// Simulated day 0: the user's first full local day after `start` (so no record precedes it).
    var localStart: CivilDate { user.zone.localDate(at: start).adding(days: 1) }

    /// The instant of local `hour:minute` on simulated day `day`.
    func local(_ day: Int, _ hour: Int, _ minute: Int) -> Timestamp {
        let date = localStart.adding(days: day)
        return user.zone.instant(for: LocalDateTime(date: date, time: LocalTimeOfDay(hour: hour, minute: minute)))
    }

    mutating func add(_ topic: String, _ time: Timestamp, _ record: FleetRecord) {
        out.append(TimedInput(topic: topic, time: time, record: record))
    }

    mutating func records() -> [TimedInput] {
        let signup = local(0, 8 + rng.int(0...10), rng.int(0...59))
        add(Topics.appActivity, signup, .userSignedUp(UserSignedUp(id: nextId("signup"), userId: user.id, timeZone: user.zone)))
        let openDays = chooseOpenDays()
        for day in openDays {
            let time = day == 0 ? signup + .minutes(20) : local(day, 7 + rng.int(0...14), rng.int(0...59))
            add(Topics.appActivity, time, .appOpened(AppOpened(id: nextId("open"), userId: user.id, entrySource: .organic)))
            if user.segment != .casual || rng.chance(0.3) {
                add(Topics.appActivity, time + .minutes(2), .userAction(UserAction(
                    id: nextId("action"), userId: user.id, action: ["note.created", "dedup_suggestion_accepted", "circle.member_added"][rng.int(0...2)])))
            }
        }
        scoreBatches(after: signup)
        syncs(openDays: Set(openDays))
        reminders(signup: signup)
        accessRequests()
        return out
    }

    /// Open days by segment (§2.1): power 3–5 a week, regular 1–2 a week, casual 2–4 a month.
    mutating func chooseOpenDays() -> [Int] {
        var chosen: Set<Int> = [0]
        switch user.segment {
        case .power, .regular:
            let perWeek = user.segment == .power ? 3...5 : 1...2
            for week in stride(from: 0, to: days, by: 7) {
                let count = rng.int(perWeek)
                var weekDays = Array(week..<min(week + 7, days))
                rng.shuffle(&weekDays)
                chosen.formUnion(weekDays.prefix(count))
            }
        case .casual:
            for month in stride(from: 0, to: days, by: 30) {
                let count = rng.int(2...4)
                var monthDays = Array(month..<min(month + 30, days))
                rng.shuffle(&monthDays)
                chosen.formUnion(monthDays.prefix(count))
            }
        }
        return chosen.sorted().filter { day in
            if day == 0 { return true }
            if let stop = user.stopsOpeningOnDay, day >= stop { return false }
            if let away = user.awayDays, away.contains(day) { return false }
            return true
        }
    }

    /// A daily batch at 02:00 UTC from the first one after sign-up: a random walk around the
    /// segment's level.
    mutating func scoreBatches(after signup: Timestamp) {
        var score = [Segment.power: 62, .regular: 48, .casual: 27][user.segment] ?? 40
        var firstBatch = Timestamp(secondsSinceEpoch: signup.secondsSinceEpoch / 86_400 * 86_400 + 7_200)
        if firstBatch <= signup { firstBatch = firstBatch + .days(1) }
        for day in 0..<(days - 1) {
            let time = firstBatch + .days(Int64(day))
            score = min(100, max(0, score + rng.int(-3...4)))
            let batch = "batch-\(Zone.utc.localDate(at: time))"
            add(Topics.scoreBatches, time, .scoreComputed(ScoreComputed(
                id: nextId("score"), userId: user.id, batchId: batch, computedAt: time, score: score,
                components: .init(
                    quality: percent(score + rng.int(-5...15)), position: percent(score + rng.int(-15...10)),
                    stability: percent(score + rng.int(-20...20)), trust: rng.chance(0.1) ? rng.int(20...45) : rng.int(70...100)))))
        }
    }

    /// Background syncs: power daily, regular every other day, casual every third. Unreviewed
    /// dedup suggestions accumulate until an open reviews them.
    mutating func syncs(openDays: Set<Int>) {
        let every = [Segment.power: 1, .regular: 2, .casual: 3][user.segment] ?? 1
        var unreviewed = 0
        var oldest: Timestamp?
        let names = ["Ana", "Ben", "Chloé", "Dev", "Eun-ji", "Farah", "Gus", "Hana", "Ivo", "Jun"]
        for day in 1..<days {  // day 0 is the sign-up day: onboarding covers it
            if openDays.contains(day) { unreviewed = 0; oldest = nil }
            guard day % every == 0 else { continue }
            let time = local(day, 12 + rng.int(0...6), rng.int(0...59))
            let newDedup = day < 7 ? rng.int(0...3) : (rng.chance(0.3) ? rng.int(1...2) : 0)
            if newDedup > 0 && oldest == nil { oldest = time }
            unreviewed += newDedup
            let enrichment = (0..<(rng.chance(0.4) ? rng.int(1...3) : 0)).map { _ in
                let i = rng.int(0...(names.count - 1))
                return ContactsSyncCompleted.Enrichment(contactId: "\(user.id)-c\(i)", name: names[i])
            }
            let conflicts = rng.chance(0.1)
                ? [ContactsSyncCompleted.Conflict(contactId: "\(user.id)-c\(rng.int(0...9))", name: names[rng.int(0...9)], field: "phone")]
                : []
            add(Topics.syncResults, time, .contactsSyncCompleted(ContactsSyncCompleted(
                id: nextId("sync"), userId: user.id, syncId: "\(user.id)-sync-\(day)", completedAt: time,
                added: rng.chance(0.3) ? rng.int(1...3) : 0, updated: rng.chance(0.5) ? rng.int(1...5) : 0, removed: 0,
                autoMerged: rng.chance(0.2) ? 1 : 0, newDedupSuggestions: newDedup, unreviewedDedupSuggestions: unreviewed,
                oldestUnreviewedDedupAt: oldest, enrichment: enrichment, conflicts: conflicts)))
        }
    }

    /// Birthdays within the simulated days (one on a leap day for a casual user), and for power
    /// users a weekly follow-up later cancelled.
    mutating func reminders(signup: Timestamp) {
        let count = [Segment.power: 3, .regular: 2, .casual: 1][user.segment] ?? 1
        for i in 0..<count {
            let date = localStart.adding(days: 5 + rng.int(0...(days - 10)))
            let birthday = user.segment == .casual && i == 0 ? MonthDay(month: 2, day: 29) : MonthDay(month: date.month, day: date.day)
            add(Topics.reminders, signup + .minutes(Int64(30 + i)), .reminderUpserted(ReminderUpserted(
                id: nextId("rem"), userId: user.id, reminderId: "\(user.id)-bday-\(i)", kind: .birthday,
                contactId: "\(user.id)-c\(i)", contactName: ["Alice", "Bruno", "Carmen"][i % 3], timeZone: user.zone,
                birthday: birthday)))
        }
        guard user.segment == .power else { return }
        let first = LocalDateTime(date: localStart.adding(days: 3), time: LocalTimeOfDay(hour: 18, minute: 30))
        add(Topics.reminders, signup + .minutes(40), .reminderUpserted(ReminderUpserted(
            id: nextId("rem"), userId: user.id, reminderId: "\(user.id)-weekly", kind: .followup, contactId: "\(user.id)-c9",
            contactName: "Jun", timeZone: user.zone, fireAtLocal: first, recurrence: .weekly, note: "weekly check-in")))
        add(Topics.reminders, local(days - 15, 10, 0), .reminderCancelled(ReminderCancelled(
            id: nextId("cancel"), userId: user.id, reminderId: "\(user.id)-weekly")))
    }

    /// Access requests: power about weekly, regular fortnightly, casual once; a new sign-in.
    mutating func accessRequests() {
        let rate: Double = switch user.segment {
        case .power: 1.0 / 7
        case .regular: 1.0 / 14
        case .casual: 1.0 / 60
        }
        for day in 1..<days where rng.chance(rate) {
            let requestId = "\(user.id)-req-\(day)"
            let record = AccessRequested(
                id: nextId("access"), userId: user.id, requestId: requestId,
                requesterName: ["Kim Park", "Lee Chan", "Mo Said"][rng.int(0...2)], field: ["home address", "birthday", "email"][rng.int(0...2)])
            add(Topics.accessRequests, local(day, rng.int(0...23), rng.int(0...59)), .accessRequested(record))
        }
        add(Topics.accessRequests, local(2, 23, 10), .securityNewSignin(SecurityAlert(
            id: nextId("signin"), userId: user.id, detail: "New sign-in on iPad")))
    }
}

private func percent(_ value: Int) -> Int { min(100, max(0, value)) }

