import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Testing

/// The stateful runtime on the real broker: restore from the changelog, exactly-once commits,
/// ticks on an idle inbox. Each test compares the worker's output with the same log folded in
/// memory by `PartitionFold`: the runtime must be exactly the fold plus Kafka.
@Suite("Stateful runtime", .enabled(if: FleetHarness.brokerAvailable), .serialized, .timeLimit(.minutes(5)))
struct RuntimeTests {
    static let engine: DeliveryEngine = {
        do { return DeliveryEngine(profile: try PolicyProfile.shipped("rin")) } catch { preconditionFailure("\(error)") }
    }()

    /// Six ordinary intents for one user, an hour apart on one day: the rin budget delivers the
    /// first ones and suppresses the rest (P-BUD-1); each intent's coalescing timer fires when
    /// the next intent arrives (ticks are off).
    static func dayOfIntents(user: String) -> [(FleetRecord, Timestamp)] {
        (0..<6).map { i in
            let intent = i.isMultiple(of: 2)
                ? Fixtures.scoreIntent(id: "\(user)-i\(i)", user: user, old: Int64(60 + i), new: Int64(61 + i))
                : Fixtures.dedupIntent(id: "\(user)-i\(i)", user: user, count: Int64(i))
            return (.intent(intent), Timestamp.at("2026-11-21T09:00:00Z") + TimeSpan(milliseconds: Int64(i) * 3_600_000))
        }
    }

    /// What the worker must write for `log` (one partition, records produced directly to the
    /// inbox): the fold's outputs by topic, in order.
    static func expectedOutputs(_ log: [(FleetRecord, Timestamp)]) -> [OutputRecord] {
        var fold = PartitionFold(processor: engine)
        var outputs: [OutputRecord] = []
        for (offset, (record, time)) in log.enumerated() {
            let coordinates = SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: Int64(offset))
            outputs += fold.apply(record, timestamp: time, coordinates: coordinates).outputs
        }
        return outputs
    }

    static func decisions(_ outputs: [OutputRecord]) -> [FleetRecord] {
        outputs.filter { $0.topic == Topics.decisions }.map(\.record)
    }

    @Test("a restarted worker restores its state from the changelog: the budget counted before still counts (P-BUD-1, principle 5)")
    func restoreKeepsBudget() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let log = Self.dayOfIntents(user: "u-restore")
        let expected = Self.decisions(Self.expectedOutputs(log))
        #expect(expected.contains { if case .decision(let d) = $0 { d.rule == "P-BUD-1" && d.outcome == .suppressed } else { false } })

        // First incarnation: the first three intents, then a graceful stop.
        let first = try fleet.start(.delivery, Self.engine)
        try await fleet.produce(Array(log.prefix(3)), to: Topics.deliveryInbox)
        let beforeStop = Self.decisions(Self.expectedOutputs(Array(log.prefix(3)))).count
        #expect(try await fleet.records(Topics.decisions, count: beforeStop).count == beforeStop)
        first.cancel()
        _ = await first.result

        // Second incarnation, a fresh process image: everything it knows comes from the changelog.
        let second = try fleet.start(.delivery, Self.engine, ["FLEET_INSTANCE_ID": "second"])
        defer { second.cancel() }
        try await fleet.produce(Array(log.dropFirst(3)), to: Topics.deliveryInbox)
        let decisions = try await fleet.records(Topics.decisions, count: expected.count)
        #expect(decisions == expected)

        // The changelog holds the user's state with the input offsets it reflects; history one
        // image per changed user per commit unit, with the inputs that changed the user in it.
        let state = try await fleet.read(Worker.delivery.stateTopic, count: 3, timeout: .seconds(5))
        let kinds = state.map { String(decoding: $0.header(ChangelogRecords.kindHeader) ?? [], as: UTF8.self) }
        #expect(kinds.contains("state") && kinds.contains("position") && kinds.contains("marker"))
        let history = try await fleet.read(Worker.delivery.historyTopic, count: 1, timeout: .seconds(5))
        let image = try ChangelogRecords.historyEntry(of: try #require(history.first), as: DeliveryState.self)
        #expect(image.userId == "u-restore" && image.place.form == .unitImage && image.place.unitStart == 0 && image.place.changed.first == 0)
    }

    @Test("rolling upgrade: a changelog of JSON images (as the build before binary images wrote it) restores, binary images follow, and every output byte is the fold's")
    func rollingUpgradeFromJSONImages() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let log = Self.dayOfIntents(user: "u-upgrade")
        let outputs = Self.expectedOutputs(log)

        // The JSON-writing build: FLEET_STATE_IMAGES=json writes its exact changelog and history bytes.
        let old = try fleet.start(.delivery, Self.engine, ["FLEET_STATE_IMAGES": "json"])
        try await fleet.produce(Array(log.prefix(3)), to: Topics.deliveryInbox)
        let beforeStop = Self.decisions(Self.expectedOutputs(Array(log.prefix(3)))).count
        #expect(try await fleet.records(Topics.decisions, count: beforeStop).count == beforeStop)
        old.cancel()
        _ = await old.result
        let jsonStates = try await fleet.read(Worker.delivery.stateTopic, count: 1_000, timeout: .seconds(3))
            .filter { $0.header(ChangelogRecords.kindHeader) == Array("state".utf8) }
        #expect(!jsonStates.isEmpty && jsonStates.allSatisfy { $0.value?.first == UInt8(ascii: "{") })

        // The new build restores those images and goes on.
        let new = try fleet.start(.delivery, Self.engine, ["FLEET_INSTANCE_ID": "second"])
        defer { new.cancel() }
        try await fleet.produce(Array(log.dropFirst(3)), to: Topics.deliveryInbox)
        for topic in [Topics.decisions, Topics.deliveries] {
            let expected = outputs.filter { $0.topic == topic }.map { RecordCodec.encode($0.record) }
            let written = try await fleet.read(topic, count: expected.count).map { $0.value ?? [] }
            #expect(written == expected, "\(topic)")
        }
        let states = try await fleet.read(Worker.delivery.stateTopic, count: 1_000, timeout: .seconds(3))
            .filter { $0.header(ChangelogRecords.kindHeader) == Array("state".utf8) }
        #expect(states.count > jsonStates.count)
        #expect(states.dropFirst(jsonStates.count).allSatisfy { $0.value?.first != UInt8(ascii: "{") })
        // Every image, old and new, reads back.
        for message in states {
            guard case .state(let user, _, _) = try ChangelogRecords.entry(of: message, as: DeliveryState.self) else {
                Issue.record("not a state record")
                continue
            }
            #expect(user == "u-upgrade")
        }
    }

    /// Three users' days of intents, interleaved in time: each user has a coalescing timer
    /// pending most of the time, so a restore has wake-ups to schedule.
    static func threeUsersLog(prefix: String) -> [(FleetRecord, Timestamp)] {
        (0..<3).flatMap { user in
            dayOfIntents(user: "\(prefix)-\(user)").map { ($0.0, $0.1 + TimeSpan(milliseconds: Int64(user) * 60_000)) }
        }.sorted { $0.1 < $1.1 }
    }

    /// Re-writes the last state record of each of `users` as a build before lazy restore wrote
    /// it: the same image and input offset, no wake-up. Appended, it is each user's last record.
    static func rewriteWithoutWakeUps(_ users: Set<String>, in fleet: FleetHarness) async throws -> Int {
        let states = try await fleet.read(Worker.delivery.stateTopic, count: 1_000, timeout: .seconds(3))
            .filter { $0.header(ChangelogRecords.kindHeader) == Array("state".utf8) }
        var last: [String: KafkaMessage] = [:]
        for message in states {
            let user = String(decoding: message.key ?? [], as: UTF8.self)
            if users.contains(user) { last[user] = message }
        }
        var rewritten: [ProducerRecord] = []
        for (user, message) in last.sorted(by: { $0.key < $1.key }) {
            let value = try #require(message.value)
            let peek = try #require(ChangelogRecords.peekState(value))
            guard case .recorded = peek.wakeUp else {
                Issue.record("the fold wrote \(user)'s state without its wake-up")
                continue
            }
            rewritten.append(ChangelogRecords.state(
                userId: user, image: Array(value[peek.image]), inputOffset: peek.inputOffset, wakeUp: .unrecorded,
                topic: fleet.namespace.physical(Worker.delivery.stateTopic), partition: message.partition))
        }
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), logger: .tests)
        _ = try await producer.send(rewritten)
        await producer.close()
        return rewritten.count
    }

    @Test("rolling upgrade to lazy restore: a changelog mixing last images without a recorded wake-up (decoded at restore) and with one (held until touched) restores, and every output byte is the fold's (principle 5)")
    func rollingUpgradeToLazyRestore() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let log = Self.threeUsersLog(prefix: "u-lazy")
        let outputs = Self.expectedOutputs(log)
        let half = log.count / 2

        let first = try fleet.start(.delivery, Self.engine)
        try await fleet.produce(Array(log.prefix(half)), to: Topics.deliveryInbox)
        let beforeStop = Self.decisions(Self.expectedOutputs(Array(log.prefix(half)))).count
        #expect(try await fleet.records(Topics.decisions, count: beforeStop).count == beforeStop)
        first.cancel()
        _ = await first.result
        // One user's last image as the build before wrote it; the others' as this build did.
        #expect(try await Self.rewriteWithoutWakeUps(["u-lazy-1"], in: fleet) == 1)

        let second = try fleet.start(.delivery, Self.engine, ["FLEET_INSTANCE_ID": "second"])
        defer { second.cancel() }
        try await fleet.produce(Array(log.dropFirst(half)), to: Topics.deliveryInbox)
        for topic in [Topics.decisions, Topics.deliveries] {
            let expected = outputs.filter { $0.topic == topic }.map { RecordCodec.encode($0.record) }
            let written = try await fleet.read(topic, count: expected.count).map { $0.value ?? [] }
            #expect(written == expected, "\(topic)")
        }
    }

    @Test("a held image that does not decode stops only its user: its record is dead-lettered naming the decode error, the partition goes on for everyone else (principle 7)")
    func undecodableHeldImageIsDeadLettered() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let good = Self.dayOfIntents(user: "u-good")
        // A damaged image (format 1, then a cut-off field) with its wake-up recorded: restore
        // holds it, only the state's decoder refuses it, when the user's record arrives.
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: fleet.bootstrap), logger: .tests)
        _ = try await producer.send(ChangelogRecords.state(
            userId: "u-broken", image: [0x08, 0x01, 0xFF], inputOffset: ChangelogRecords.migratedInputOffset, wakeUp: .recorded(nil),
            topic: fleet.namespace.physical(Worker.delivery.stateTopic), partition: 0))
        await producer.close()

        let worker = try fleet.start(.delivery, Self.engine)
        defer { worker.cancel() }
        let broken = Self.dayOfIntents(user: "u-broken")[0]
        try await fleet.produce([broken] + good, to: Topics.deliveryInbox)
        // The good user's records sit at offsets 1…, after the dead-lettered one.
        var fold = PartitionFold(processor: Self.engine)
        var outputs: [OutputRecord] = []
        for (index, (record, time)) in good.enumerated() {
            let coordinates = SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: Int64(index + 1))
            outputs += fold.apply(record, timestamp: time, coordinates: coordinates).outputs
        }
        let expected = Self.decisions(outputs)
        let decisions = try await fleet.records(Topics.decisions, count: expected.count)
        #expect(decisions == expected)
        let dead = try await fleet.read(Topics.deadLetter(of: Topics.deliveryInbox), count: 1)
        let message = try #require(dead.first)
        #expect(String(decoding: message.key ?? [], as: UTF8.self) == "u-broken")
        let error = message.header(KafkaRecords.Header.error).map { String(decoding: $0, as: UTF8.self) }
        #expect(error?.contains("does not decode") == true, "\(error ?? "no error header")")
    }

    @Test("exactly-once: outputs, state and offsets commit in transactions; the output equals the fold (principle 4)")
    func exactlyOnceMatchesFold() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let log = Self.dayOfIntents(user: "u-eos")
        let expected = Self.decisions(Self.expectedOutputs(log))
        let eos = ["FLEET_GUARANTEE": "exactly_once", "FLEET_INSTANCE_ID": "eos-1"]

        let first = try fleet.start(.delivery, Self.engine, eos)
        try await fleet.produce(Array(log.prefix(2)), to: Topics.deliveryInbox)
        let beforeStop = Self.decisions(Self.expectedOutputs(Array(log.prefix(2)))).count
        #expect(try await fleet.records(Topics.decisions, count: beforeStop).count == beforeStop)
        first.cancel()
        _ = await first.result

        let second = try fleet.start(.delivery, Self.engine, eos)
        defer { second.cancel() }
        try await fleet.produce(Array(log.dropFirst(2)), to: Topics.deliveryInbox)
        let decisions = try await fleet.records(Topics.decisions, count: expected.count)
        #expect(decisions == expected)

        // The consumed offsets were committed through the transactions.
        let reader = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": fleet.bootstrap, "group.id": fleet.namespace.prefix + Worker.delivery.rawValue,
        ]), logger: .tests)
        let inbox = TopicPartition(fleet.namespace.physical(Topics.deliveryInbox), 0)
        let deadline = ContinuousClock.now + .seconds(10)
        var committed: Int64?
        while ContinuousClock.now < deadline {
            committed = try await reader.committed([inbox])[inbox]
            if committed == Int64(log.count) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(committed == Int64(log.count))
        await reader.close()
    }

    @Test("timers fire on an idle partition through ticks: a notification deferred by quiet hours is delivered at their end (P-DND-1)")
    func ticksFireTimersOnIdlePartition() async throws {
        let fleet = try await FleetHarness.make(partitions: 1)
        defer { Task { await fleet.tearDown() } }
        let delivery = try fleet.start(.delivery, Self.engine, ["FLEET_TICK_INTERVAL_MS": "500"])
        defer { delivery.cancel() }

        // Ticks carry the wall clock, so this test lives in wall-clock time: quiet hours (UTC, the
        // zone of a user who never said otherwise) from an hour ago until the next full minute at
        // least 40 s away.
        let now = Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000))
        let minute: Int64 = 60_000
        let end = Timestamp(millisecondsSinceEpoch: ((now.millisecondsSinceEpoch + 40_000) / minute + 1) * minute)
        let start = now + TimeSpan(milliseconds: -3_600_000)
        func hhmm(_ t: Timestamp) -> String { String(t.rfc3339.dropFirst(11).prefix(5)) }
        let settings = #"{"v":1,"type":"user.settings_changed","id":"qh-1","user_id":"u-tick","quiet_hours":{"start":"\#(hhmm(start))","end":"\#(hhmm(end))"}}"#
        try await fleet.produceRaw(key: "u-tick", value: Array(settings.utf8), to: Topics.deliveryInbox, at: now)
        try await fleet.produce(
            [(.intent(Fixtures.scoreIntent(id: "tick-i1", user: "u-tick", old: 50, new: 58)), now + TimeSpan(milliseconds: 1))],
            to: Topics.deliveryInbox)

        // Nothing else is produced: the coalescing window's end and the quiet hours' end can only
        // be noticed through ticks.
        let decisions = try await fleet.records(Topics.decisions, count: 2, timeout: .seconds(150)).compactMap { record -> Decision? in
            if case .decision(let d) = record { d } else { nil }
        }
        #expect(decisions.map(\.outcome) == [.deferred, .delivered])
        #expect(decisions.first?.until == end)
        #expect(decisions.first?.rule == "P-DND-1")
        let deliveries = try await fleet.records(Topics.deliveries, count: 1, timeout: .seconds(5))
        guard case .delivery(let sent)? = deliveries.first else {
            Issue.record("no delivery")
            return
        }
        #expect(sent.notification == "score.updated")
        // Delivered at the end of quiet hours, in log time (the tick's time), not before.
        let delivered = try await fleet.read(Topics.deliveries, count: 1, timeout: .seconds(5))
        let stamp = try #require(delivered.first?.timestamp)
        #expect(stamp >= end.millisecondsSinceEpoch)
        let ticks = try await fleet.read(Topics.deliveryInbox, count: 3, timeout: .seconds(5))
        #expect(ticks.contains { $0.key == nil }, "ticks were written to the inbox")
    }
}
