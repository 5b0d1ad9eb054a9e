import FleetModel
import FleetTestSupport

/// The fixed input of the crash-equivalence test: ~45 users fed in waves through every external
/// topic of the fleet, shaped so that the fleet's output is a function of the input alone (see
/// `CrashEquivalenceTests` for why each constraint exists).
///
/// - Every record of wave `k` carries the same timestamp `time` (fixed dates in March 2026, hours
///   apart, never the wall clock), strictly increasing from wave to wave.
/// - Within one wave each partition receives records from exactly one `Source`: the users of
///   partition `p` (murmur2 of the user id, as the fleet partitions) get records of
///   `sources[p]` only, so each inbox partition has one writer per wave.
/// - Wave 0 signs everyone up; the last wave, days after the others, only moves time on so every
///   held intent is decided.
/// - The mix exercises access requests and sign-in alerts (security, immediate), score batches,
///   contact syncs, reminders (upserted in one reminder wave, fired at the next one of the
///   partition), app activity (sign-up with a time zone, opens, actions, quiet-hour settings) and
///   enough non-security intents per user and local day to exhaust the daily budget.
struct CrashTraffic: Sendable {
    /// Who writes a wave's records into a partition's inbox.
    enum Source: String, Sendable, CaseIterable {
        /// `rin.app.activity`, forwarded by the delivery worker's ingest.
        case activity
        /// `rin.score.batches` → score-worker.
        case score
        /// `rin.contacts.sync-results` → sync-worker.
        case sync
        /// `rin.security.access-requests` → access-worker.
        case access
        /// `rin.reminders` → reminder-worker (ingest, then due reminders fire).
        case reminder

        var topic: String {
            switch self {
            case .activity: Topics.appActivity
            case .score: Topics.scoreBatches
            case .sync: Topics.syncResults
            case .access: Topics.accessRequests
            case .reminder: Topics.reminders
            }
        }
    }

    struct User: Sendable, Hashable {
        var id: String
        var partition: Int32
        var zone: Zone
    }

    struct Wave: Sendable {
        var index: Int
        var time: Timestamp
        /// The one source of each partition in this wave, indexed by partition.
        var sources: [Source]
        /// The wave's records in production order, with their logical topic.
        var records: [(topic: String, record: FleetRecord)]
    }

    let partitions: Int32
    let users: [User]
    let waves: [Wave]

    /// Which source feeds partition `p` in wave `k ≥ 1`: a rotation over a pattern heavy in
    /// non-security intents (score, sync, reminder) so budgets are reached, with security and
    /// activity in between. Partitions are shifted so every wave mixes sources across partitions.
    private static let pattern: [Source] = [.score, .sync, .reminder, .score, .access, .sync, .reminder, .activity, .score]

    static let zones = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Pacific/Auckland"]

    /// `usersPerPartition` users per partition and `waveCount` waves after the sign-up wave; the
    /// same arguments always give the same traffic.
    static func make(seed: UInt64, partitions: Int32, usersPerPartition: Int, waveCount: Int) -> CrashTraffic {
        var random = SplitMix64(seed: seed)
        var buckets = [[User]](repeating: [], count: Int(partitions))
        var n = 0
        while buckets.contains(where: { $0.count < usersPerPartition }) {
            let id = "cu-\(n)"
            n += 1
            let partition = JavaMurmur2.partition(forKey: Array(id.utf8), partitions: partitions)
            guard buckets[Int(partition)].count < usersPerPartition else { continue }
            let zoneName = zones[random.int(zones.count)]
            guard let zone = Zone(identifier: zoneName) else { preconditionFailure("unknown zone \(zoneName)") }
            buckets[Int(partition)].append(User(id: id, partition: partition, zone: zone))
        }
        let users = buckets.flatMap { $0 }

        var builder = Builder(random: random.split())
        var waves: [Wave] = []
        // Wave 0: everyone signs up (the day before the busy day, so day-one limits do not apply).
        let signUp = Timestamp.at("2026-03-09T10:00:00Z")
        waves.append(Wave(
            index: 0, time: signUp, sources: Array(repeating: .activity, count: Int(partitions)),
            records: users.flatMap { builder.signUp($0, wave: 0) }))
        let first = Timestamp.at("2026-03-10T05:00:00Z")
        for k in 1...waveCount {
            let time = first + .minutes(Int64(150 * (k - 1)))
            let sources = (0..<Int(partitions)).map { p in pattern[(k - 1 + 3 * p) % pattern.count] }
            var records: [(topic: String, record: FleetRecord)] = []
            for user in users {
                records += builder.records(for: user, source: sources[Int(user.partition)], wave: k, at: time)
            }
            waves.append(Wave(index: k, time: time, sources: sources, records: records))
        }
        // The closing wave, days later: one activity record per user moves every inbox partition's
        // time past every coalescing window, quiet-hour end and digest time, so each pending
        // intent gets its decision.
        let closing = Timestamp.at("2026-03-13T12:00:00Z")
        waves.append(Wave(
            index: waveCount + 1, time: closing, sources: Array(repeating: .activity, count: Int(partitions)),
            records: users.map { (Topics.appActivity, .userAction(UserAction(id: "close-\($0.id)", userId: $0.id, action: "contact.viewed"))) }))
        return CrashTraffic(partitions: partitions, users: users, waves: waves)
    }

    var recordCount: Int { waves.reduce(0) { $0 + $1.records.count } }

    /// Draws each user's records; keeps what later records build on (scores, reminders).
    private struct Builder {
        var random: SplitMix64
        var scores: [String: Int] = [:]
        var reminders: [String: [String]] = [:]

        mutating func signUp(_ user: User, wave: Int) -> [(topic: String, record: FleetRecord)] {
            var records: [(topic: String, record: FleetRecord)] = [
                (Topics.appActivity, .userSignedUp(UserSignedUp(id: "su-\(user.id)", userId: user.id, timeZone: user.zone))),
            ]
            if random.chance(0.3), let start = LocalTimeOfDay("23:00"), let end = LocalTimeOfDay("06:30") {
                records.append((Topics.appActivity, .settingsChanged(SettingsChanged(
                    id: "set-\(wave)-\(user.id)", userId: user.id, quietHours: QuietHours(start: start, end: end)))))
            }
            return records
        }

        mutating func records(for user: User, source: Source, wave k: Int, at time: Timestamp) -> [(topic: String, record: FleetRecord)] {
            let stem = "w\(k)-\(user.id)"
            switch source {
            case .score:
                let old = scores[user.id] ?? random.int(35...75)
                let step = random.int(4...14) * (random.chance(0.65) ? 1 : -1)
                let new = min(100, max(0, old + step))
                scores[user.id] = new
                let components = ScoreComputed.Components(
                    quality: random.int(40...95), position: random.int(40...95), stability: random.int(40...95),
                    trust: random.int(40...95))
                return [(source.topic, .scoreComputed(ScoreComputed(
                    id: "sc-\(stem)", userId: user.id, batchId: "batch-\(k)", computedAt: time, score: new,
                    components: components)))]
            case .sync:
                let enrichment = (0..<random.int(0...3)).map {
                    ContactsSyncCompleted.Enrichment(contactId: "c-\(stem)-\($0)", name: "Contact \(random.int(100))")
                }
                let conflicts = random.chance(0.4)
                    ? [ContactsSyncCompleted.Conflict(contactId: "c-\(stem)-x", name: "Lee", field: "phone")] : []
                return [(source.topic, .contactsSyncCompleted(ContactsSyncCompleted(
                    id: "sy-\(stem)", userId: user.id, syncId: "sync-\(stem)", completedAt: time,
                    added: random.int(0...4), updated: random.int(0...3), removed: random.int(0...1),
                    autoMerged: random.int(0...2), newDedupSuggestions: random.int(0...4),
                    unreviewedDedupSuggestions: random.int(0...6), enrichment: enrichment, conflicts: conflicts)))]
            case .access:
                var records: [(topic: String, record: FleetRecord)] = (0..<random.int(1...2)).map { j in
                    (source.topic, .accessRequested(AccessRequested(
                        id: "ac-\(stem)-\(j)", userId: user.id, requestId: "req-\(stem)-\(j)",
                        requesterName: ["Dana", "Ravi", "Mei", "Olu"][random.int(4)], field: ["phone number", "email", "address"][random.int(3)])))
                }
                if random.chance(0.35) {
                    records.append((source.topic, .securityNewSignin(SecurityAlert(
                        id: "si-\(stem)", userId: user.id, detail: "New sign-in from Firefox on Linux."))))
                }
                return records
            case .reminder:
                var records: [(topic: String, record: FleetRecord)] = []
                // A follow-up due an hour after this wave (fires at the partition's next reminder
                // wave) and sometimes one already due (fires at once).
                for (j, lead) in [60, random.chance(0.4) ? -30 : nil].compactMap({ $0 }).enumerated() {
                    let local = user.zone.localDateTime(at: time + .minutes(Int64(lead)))
                    let reminderId = "rem-\(stem)-\(j)"
                    reminders[user.id, default: []].append(reminderId)
                    records.append((source.topic, .reminderUpserted(ReminderUpserted(
                        id: "ru-\(stem)-\(j)", userId: user.id, reminderId: reminderId, kind: .followup,
                        contactId: "c-\(stem)-r\(j)", contactName: "Contact \(random.int(100))", timeZone: user.zone,
                        fireAtLocal: LocalDateTime(date: local.date, time: LocalTimeOfDay(hour: local.time.hour, minute: local.time.minute)),
                        note: random.chance(0.5) ? "Call back" : nil))))
                }
                if random.chance(0.3) {
                    let tomorrow = user.zone.localDate(at: time).adding(days: 1)
                    if let birthday = MonthDay(month: tomorrow.month, day: tomorrow.day) {
                        records.append((source.topic, .reminderUpserted(ReminderUpserted(
                            id: "rb-\(stem)", userId: user.id, reminderId: "bday-\(stem)", kind: .birthday,
                            contactId: "c-\(stem)-b", contactName: "Contact \(random.int(100))", timeZone: user.zone,
                            birthday: birthday, recurrence: .none))))
                    }
                }
                if random.chance(0.2), let earlier = reminders[user.id]?.first {
                    reminders[user.id]?.removeFirst()
                    records.append((source.topic, .reminderCancelled(ReminderCancelled(
                        id: "rc-\(stem)", userId: user.id, reminderId: earlier))))
                }
                return records
            case .activity:
                var records: [(topic: String, record: FleetRecord)] = []
                if random.chance(0.5) {
                    records.append((source.topic, .appOpened(AppOpened(id: "op-\(stem)", userId: user.id, entrySource: .organic))))
                }
                if random.chance(0.4) {
                    records.append((source.topic, .userAction(UserAction(id: "ua-\(stem)", userId: user.id, action: "contact.edited"))))
                }
                if random.chance(0.3) {
                    records.append((source.topic, .scoreViewed(ScoreViewed(id: "sv-\(stem)", userId: user.id, score: scores[user.id] ?? 50))))
                }
                if random.chance(0.2) {
                    records.append((source.topic, .notificationDismissed(NotificationInteraction(
                        id: "nd-\(stem)", userId: user.id, notificationId: "n-\(stem)", category: "SCORE"))))
                }
                return records
            }
        }
    }
}
