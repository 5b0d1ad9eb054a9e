import DeliveryPolicy
import FleetModel
import FleetOperations
import FleetWorkers
import Kafka

/// The records behind the explain tests, and an in-memory delivery worker that writes what the
/// runtime writes (outputs, history change records) for them, so timelines can be built with
/// and without a broker from the same log.
enum ExplainScenario {
    static let engine: DeliveryEngine = {
        do { return DeliveryEngine(profile: try PolicyProfile.shipped("rin")) } catch { preconditionFailure("\(error)") }
    }()

    static let budgetUser = "u-budget"
    /// A user on the other partition of a two-partition fleet (murmur2 decides; checked at use).
    static let quietUser = (0..<100).map { "u-quiet-\($0)" }.first {
        KeyPartitioner.partition(forKey: $0, partitions: 2) != KeyPartitioner.partition(forKey: budgetUser, partitions: 2)
    } ?? "u-quiet"

    /// One inbox record: a user's record, or a tick to `partition`.
    struct Entry {
        var record: FleetRecord
        var time: Timestamp
        var key: String?
    }

    /// Four intents for the budget user on one UTC day, an hour apart: three are delivered, the
    /// fourth loses on the daily budget of 3 (P-BUD-1). Each coalescing window (30 s) closes
    /// when the next record arrives; a tick closes the last one.
    static func budgetDay() -> [Entry] {
        let user = budgetUser
        let intents: [Intent] = [
            Fixtures.scoreIntent(id: "b1", user: user, old: 60, new: 64),
            Fixtures.dedupIntent(id: "b2", user: user, count: 3),
            Intent(id: "b3", userId: user, notification: "contacts.sync_conflict", category: "CONTACTS",
                   data: ["count": 2, "contact_ids": ["c-1", "c-2"]], source: Fixtures.source),
            Fixtures.enrichmentIntent(id: "b4", user: user, names: ["Ada", "Grace"]),
        ]
        var entries = intents.enumerated().map { i, intent in
            Entry(record: .intent(intent), time: .at("2026-11-21T09:00:00Z") + .hours(Int64(i)), key: user)
        }
        entries.append(Entry(record: .tick(Tick(id: "tick-budget")), time: .at("2026-11-21T12:05:00Z"), key: nil))
        return entries
    }

    /// One intent for the quiet user at 23:00 UTC, inside the default quiet hours 22:00–07:00:
    /// a tick at 23:05 closes its window and it is deferred to 07:00 (P-DND-1); a tick at 07:00:05
    /// fires that timer and it is delivered.
    static func quietNight() -> [Entry] {
        [
            Entry(record: .intent(Fixtures.scoreIntent(id: "q1", user: quietUser, old: 50, new: 58)),
                  time: .at("2026-11-21T23:00:00Z"), key: quietUser),
            Entry(record: .tick(Tick(id: "tick-night")), time: .at("2026-11-21T23:05:00Z"), key: nil),
            Entry(record: .tick(Tick(id: "tick-morning")), time: .at("2026-11-22T07:00:05Z"), key: nil),
        ]
    }

    static let digestUser = "u-digest"

    /// Issue 15's busy day: seven intents on 21 November (over the digest threshold of 5, so
    /// the last ones are `digested`, P-BUD-5), three more at 03:00 the next night, deferred to
    /// 07:00 (P-DND-1), where they spend the budget; at 09:00 the digest is suppressed
    /// (daily_budget, P-BUD-1).
    static func digestDays() -> [Entry] {
        let user = digestUser
        let day: [Intent] = [
            Fixtures.scoreIntent(id: "g1", user: user, old: 60, new: 64),
            Fixtures.dedupIntent(id: "g2", user: user, count: 3),
            Intent(id: "g3", userId: user, notification: "contacts.sync_conflict", category: "CONTACTS",
                   data: ["count": 2, "contact_ids": ["c-1", "c-2"]], source: Fixtures.source),
            Fixtures.enrichmentIntent(id: "g4", user: user, names: ["Ada"]),
            Fixtures.enrichmentIntent(id: "g5", user: user, names: ["Grace"]),
            Fixtures.enrichmentIntent(id: "g6", user: user, names: ["Alan"]),
            Fixtures.enrichmentIntent(id: "g7", user: user, names: ["Edsger"]),
        ]
        let night: [Intent] = [
            Fixtures.scoreIntent(id: "g8", user: user, old: 64, new: 70),
            Fixtures.dedupIntent(id: "g9", user: user, count: 5),
            Intent(id: "g10", userId: user, notification: "contacts.sync_conflict", category: "CONTACTS",
                   data: ["count": 1, "contact_ids": ["c-3"]], source: Fixtures.source),
        ]
        var entries = day.enumerated().map { i, intent in
            Entry(record: .intent(intent), time: .at("2026-11-21T09:00:00Z") + .hours(Int64(i)), key: user)
        }
        entries += night.enumerated().map { i, intent in
            Entry(record: .intent(intent), time: .at("2026-11-22T03:00:00Z") + .minutes(Int64(10 * i)), key: user)
        }
        entries.append(Entry(record: .tick(Tick(id: "tick-seven")), time: .at("2026-11-22T07:00:05Z"), key: nil))
        entries.append(Entry(record: .tick(Tick(id: "tick-nine")), time: .at("2026-11-22T09:00:05Z"), key: nil))
        return entries
    }

    static let lapsedUser = "u-lapsed"

    /// Issue 15's lapsed user: last open on 1 October, an enrichment on 3 October and a dedup
    /// on 12 October (both delivered); quiet mode begins on 15 October (day 14) and the 14-day
    /// summary waits out quiet hours until 07:00 (P-DND-1), then goes out (P-LAP-2, P-LAP-3).
    static func lapsedFortnight() -> [Entry] {
        let user = lapsedUser
        return [
            Entry(record: .userSignedUp(UserSignedUp(id: "l0", userId: user, timeZone: .utc)), time: .at("2026-10-01T08:00:00Z"), key: user),
            Entry(record: .intent(Fixtures.enrichmentIntent(id: "l1", user: user, names: ["Ada"])),
                  time: .at("2026-10-03T10:00:00Z"), key: user),
            Entry(record: .intent(Fixtures.dedupIntent(id: "l2", user: user, count: 2)), time: .at("2026-10-12T10:00:00Z"), key: user),
            Entry(record: .tick(Tick(id: "tick-l2")), time: .at("2026-10-12T10:01:00Z"), key: nil),
            Entry(record: .tick(Tick(id: "tick-midnight")), time: .at("2026-10-15T00:00:05Z"), key: nil),
            Entry(record: .tick(Tick(id: "tick-seven")), time: .at("2026-10-15T07:00:05Z"), key: nil),
        ]
    }

    /// The user's log as the runtime would leave it after folding `entries` on `partition`.
    static func log(user: String, entries: [Entry], partition: Int32, partitionCount: Int = 2) -> UserLog {
        var worker = InMemoryDeliveryWorker(partition: partition)
        for entry in entries { worker.append(entry) }
        return UserLog(
            userId: user, partition: partition, partitionCount: partitionCount, inbox: worker.inbox,
            history: worker.history, outputs: worker.outputs)
    }
}

/// One inbox partition folded by the delivery engine, recording the messages the runtime
/// (FoldCore) would have written: outputs stamped with their log time, one history change per
/// changed user per step.
struct InMemoryDeliveryWorker {
    let partition: Int32
    var fold = PartitionFold(processor: ExplainScenario.engine)
    var inbox: [KafkaMessage] = []
    var history: [KafkaMessage] = []
    var outputs: [KafkaMessage] = []
    private var nextOffset: [String: Int64] = [:]

    init(partition: Int32) { self.partition = partition }

    mutating func append(_ entry: ExplainScenario.Entry) {
        let read = KafkaMessage(
            topic: Topics.deliveryInbox, partition: partition, offset: Int64(inbox.count),
            key: entry.key.map { Array($0.utf8) }, value: RecordCodec.encode(entry.record),
            timestamp: entry.time.millisecondsSinceEpoch, timestampType: .createTime)
        inbox.append(read)
        let origin = KafkaRecords.origin(of: read)
        let step = fold.apply(entry.record, timestamp: entry.time, coordinates: origin.coordinates, originIndex: origin.index)
        for output in step.outputs {
            outputs.append(written(topic: output.topic, key: output.key, value: RecordCodec.encode(output.record),
                                   timestamp: output.timestamp))
        }
        for change in step.changes {
            do {
                let record = ChangelogRecords.change(
                    userId: change.userId, before: try change.before.map { try StateCoding.encode($0) },
                    after: try StateCoding.encode(change.after), input: KafkaRecords.coordinates(read),
                    logTime: fold.logTime ?? entry.time, topic: Worker.delivery.historyTopic, partition: partition)
                var message = written(
                    topic: record.topic, key: change.userId, value: record.value ?? [], timestamp: fold.logTime ?? entry.time)
                message.headers = record.headers
                history.append(message)
            } catch {
                preconditionFailure("a delivery state did not encode: \(error)")
            }
        }
    }

    private mutating func written(topic: String, key: String, value: [UInt8], timestamp: Timestamp) -> KafkaMessage {
        let offset = nextOffset[topic, default: 0]
        nextOffset[topic] = offset + 1
        return KafkaMessage(
            topic: topic, partition: partition, offset: offset, key: Array(key.utf8), value: value,
            timestamp: timestamp.millisecondsSinceEpoch, timestampType: .createTime)
    }
}

extension ExplainScenario {
    /// Produces the entries to the inbox partition in order: the users' records by key, ticks
    /// (no key) explicitly to the partition, as the worker's own tick writer does.
    static func produce(_ entries: [Entry], to partition: Int32, in fleet: FleetHarness) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), logger: .tests)
        _ = try await producer.send(entries.map { entry in
            ProducerRecord(
                topic: fleet.namespace.physical(Topics.deliveryInbox), partition: partition,
                key: entry.key.map { Array($0.utf8) }, value: RecordCodec.encode(entry.record),
                timestamp: entry.time.millisecondsSinceEpoch)
        })
        await producer.close()
    }
}
