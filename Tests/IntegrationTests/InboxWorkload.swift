import DeliveryPolicy
import FleetModel
import Kafka
import Testing

/// A steady stream of intents for the delivery inbox, written there directly as the upstream
/// workers would, in phases a test interleaves with faults (instances joining and leaving, the
/// broker pausing).
///
/// Every user gets, on one local day (UTC: no time zone is ever set, P-TIME-1), three ordinary
/// intents in the first phase that each deliver (score, dedup, sync conflict: three categories
/// or windows, each its own cap), budget-exempt security intents in every phase, and in the last
/// phase a `score.milestone` the budget must suppress (P-BUD-1): the day's three slots were spent
/// before any scaling step, so a user whose partition moved in between is suppressed only if the
/// budget counted before the move still counts after it. At most five non-security intents per
/// user and day, so the digest fallback (P-BUD-5) stays out of play; all between 09:00 and 22:00
/// (no quiet hours, P-DND-1). A security intent per partition ends the stream an hour later so
/// every coalescing window is released by the log itself (ticks are off).
///
/// Timestamps are fixed and increase along the whole stream, hence along every partition: the
/// runtime and the in-memory reference see the same times whatever the wall clock does.
struct InboxWorkload {
    struct Entry {
        var record: FleetRecord
        var time: Timestamp
        /// Users are placed explicitly (user index modulo the partition count) so every
        /// partition carries the same number of users, whatever murmur2 makes of the names.
        var partition: Int32
    }

    let partitions: Int32
    let users: [String]
    /// The entries of each phase, in production order.
    let phases: [[Entry]]

    var count: Int { phases.reduce(0) { $0 + $1.count } }

    /// The milestone intent of `user` (the one the budget must suppress).
    static func milestoneId(_ user: String) -> String { "\(user)-milestone" }
    /// The intents of `user` that spend the day's budget.
    static func budgetSpendingIds(_ user: String) -> [String] { ["\(user)-score", "\(user)-dedup", "\(user)-conflict"] }

    func partition(of user: String) -> Int32 {
        Int32(users.firstIndex(of: user) ?? 0) % partitions
    }

    /// `userCount` users over `partitions` partitions, starting at 09:00 UTC on `day`, one record
    /// every `spacing` seconds. Phase 1 spends the budget; the middle phases (`middlePhases`
    /// of them) carry security intents; the last carries the milestones and the closing records.
    static func budgetAcrossMoves(
        users userCount: Int, partitions: Int32, middlePhases: Int = 1, day: String = "2026-11-21", spacing: Int64 = 10
    ) -> InboxWorkload {
        let users = (0..<userCount).map { "u-\(String($0 + 100))" }
        var clock = Timestamp.at("\(day)T09:00:00Z").millisecondsSinceEpoch
        func next() -> Timestamp {
            clock += spacing * 1000
            return Timestamp(millisecondsSinceEpoch: clock)
        }
        func placed(_ index: Int) -> Int32 { Int32(index) % partitions }

        var phases: [[Entry]] = []
        var first: [Entry] = []
        let spenders: [(String) -> FleetRecord] = [
            { (u: String) in FleetRecord.intent(Fixtures.scoreIntent(id: "\(u)-score", user: u, old: 70, new: 74)) },
            { (u: String) in FleetRecord.intent(Fixtures.securityIntent(id: "\(u)-signin-1", user: u)) },
            { (u: String) in FleetRecord.intent(Fixtures.dedupIntent(id: "\(u)-dedup", user: u, count: 3)) },
            { (u: String) in FleetRecord.intent(Fixtures.conflictIntent(id: "\(u)-conflict", user: u, count: 2)) },
        ]
        for make in spenders {
            for (index, user) in users.enumerated() {
                first.append(Entry(record: make(user), time: next(), partition: placed(index)))
            }
        }
        phases.append(first)
        for phase in 0..<middlePhases {
            var middle: [Entry] = []
            for round in 0..<2 {
                for (index, user) in users.enumerated() {
                    let intent = Fixtures.securityIntent(
                        id: "\(user)-signin-m\(phase)-\(round)", user: user,
                        detail: "New sign-in from device \(phase)-\(round).")
                    middle.append(Entry(record: .intent(intent), time: next(), partition: placed(index)))
                }
            }
            phases.append(middle)
        }
        var last: [Entry] = []
        for (index, user) in users.enumerated() {
            let milestone = Fixtures.milestoneIntent(id: milestoneId(user), user: user, label: "Strong", threshold: 80, score: 82)
            last.append(Entry(record: .intent(milestone), time: next(), partition: placed(index)))
        }
        for (index, user) in users.enumerated() {
            let intent = Fixtures.securityIntent(id: "\(user)-signin-last", user: user, detail: "New sign-in from the last device.")
            last.append(Entry(record: .intent(intent), time: next(), partition: placed(index)))
        }
        clock += 3_600_000
        for partition in 0..<partitions {
            let user = users[Int(partition)]
            let intent = Fixtures.securityIntent(id: "close-\(partition)", user: user, detail: "Closing sign-in.")
            last.append(Entry(record: .intent(intent), time: next(), partition: partition))
        }
        phases.append(last)
        return InboxWorkload(partitions: partitions, users: users, phases: phases)
    }
}

/// What the delivery worker must write for an inbox log: the log folded in memory, one
/// `PartitionFold` per partition, with the coordinates the runtime uses for records written
/// straight into the inbox (inbox topic, partition, offset: they carry no provenance).
struct ReferenceOutputs {
    /// Logical output topic → record id → canonical bytes.
    var byTopic: [String: [String: [UInt8]]] = [:]
    var decisions: [Decision] = []
    var deadLetters = 0

    /// Folds `log` (messages of the physical inbox topic, any order) with `engine`.
    init(log: [KafkaMessage], engine: DeliveryEngine) throws {
        let byPartition = Dictionary(grouping: log, by: \.partition)
        for (partition, messages) in byPartition.sorted(by: { $0.key < $1.key }) {
            var fold = PartitionFold(processor: engine)
            for message in messages.sorted(by: { $0.offset < $1.offset }) {
                let value = try #require(message.value)
                let record = try RecordCodec.decode(value, topic: Topics.deliveryInbox)
                let step = fold.apply(
                    record, timestamp: Timestamp(millisecondsSinceEpoch: try #require(message.timestamp)),
                    coordinates: SourceCoordinates(topic: Topics.deliveryInbox, partition: partition, offset: message.offset))
                if step.deadLetter != nil { deadLetters += 1 }
                for output in step.outputs {
                    byTopic[output.topic, default: [:]][output.record.id] = RecordCodec.encode(output.record)
                    if case .decision(let decision) = output.record { decisions.append(decision) }
                }
            }
        }
    }

    var outputTopics: [String] { byTopic.keys.sorted() }
}

extension Fixtures {
    static func conflictIntent(id: String, user: String, count: Int64) -> Intent {
        Intent(id: id, userId: user, notification: "contacts.sync_conflict", category: "CONTACTS",
               data: ["count": .int(count), "contact_id": "c-1", "contact_ids": .array(["c-1"])], source: source)
    }

    static func milestoneIntent(id: String, user: String, label: String, threshold: Int64, score: Int64) -> Intent {
        Intent(id: id, userId: user, notification: "score.milestone", category: "SCORE",
               data: ["label": .string(label), "threshold": .int(threshold), "score": .int(score)], source: source)
    }

    static func securityIntent(id: String, user: String, detail: String) -> Intent {
        Intent(id: id, userId: user, notification: "security.new_signin", category: "SECURITY",
               data: ["detail": .string(detail)], source: source)
    }
}
