import FleetModel
import FleetService
@testable import FleetWorkers
import Foundation
import Kafka
import PropertyBased
import Testing
import UpstreamProcessors

/// The runtime's pure pieces, without a broker: topic checks, changelog records, the restore
/// rule, provenance headers.
@Suite("Runtime pieces")
struct RuntimePieceTests {
    let layout = TopicLayout(worker: .delivery, namespace: TopicNamespace(prefix: "p."))

    @Test("start-up check: co-partitioned topics give their count; a mismatch names every topic and count (principle 2)")
    func startupCheck() throws {
        var counts = ["p.rin.app.activity": 4, "p.rin.delivery.inbox": 4, "p.delivery-worker.state": 4, "p.delivery-worker.history": 4]
        #expect(try layout.partitionCount(in: counts) == 4)
        counts["p.delivery-worker.state"] = 3
        #expect(throws: TopicLayout.Mismatch(description:
            "delivery-worker refuses to start: topics are not co-partitioned: p.rin.app.activity=4, p.rin.delivery.inbox=4, p.delivery-worker.state=3, p.delivery-worker.history=4")) {
            try layout.partitionCount(in: counts)
        }
        counts["p.delivery-worker.history"] = nil
        #expect(throws: TopicLayout.Mismatch(description:
            "delivery-worker refuses to start: missing topic(s) p.delivery-worker.history (create them with `fleetctl topics create`)")) {
            try layout.partitionCount(in: counts)
        }
        // Score, sync and access have no ingest topic.
        #expect(TopicLayout(worker: .score, namespace: TopicNamespace()).coPartitioned == ["rin.score.batches", "score-worker.state", "score-worker.history"])
    }

    @Test("a partition count that changes while running is reported per topic")
    func changedCounts() {
        let counts = ["p.rin.app.activity": 4, "p.rin.delivery.inbox": 8, "p.delivery-worker.state": 4, "p.delivery-worker.history": 4]
        #expect(layout.changedCounts(counts, expected: 4) == [
            "p.rin.delivery.inbox": "topic p.rin.delivery.inbox: partition count changed from 4 to 8; processing of it stopped (no silent reshuffle: migrate with `fleetctl partitions migrate`)",
        ])
        #expect(layout.changedCounts(counts, expected: 8).count == 3)
    }

    struct Counter: Codable, Hashable, Sendable {
        var count: Int
        var note: String
    }

    func message(_ record: ProducerRecord, offset: Int64) -> KafkaMessage {
        KafkaMessage(topic: record.topic, partition: record.partition ?? 0, offset: offset, key: record.key, value: record.value,
                     headers: record.headers, timestamp: nil, timestampType: nil)
    }

    @Test("changelog records read back as written: state, position, marker")
    func changelogRoundTrip() throws {
        let state = Counter(count: 3, note: #"quote " slash / newline \#n"#)
        let stateRecord = ChangelogRecords.state(
            userId: "u/1", image: try StateCoding.encode(state), inputOffset: 41, topic: "s", partition: 2)
        #expect(stateRecord.partition == 2)
        guard case .state(let user, let offset, let decoded) = try ChangelogRecords.entry(of: message(stateRecord, offset: 0), as: Counter.self)
        else { Issue.record("not a state"); return }
        #expect(user == "u/1" && offset == 41 && decoded == state)

        let time = Timestamp.at("2026-11-21T09:00:00.123Z")
        let position = ChangelogRecords.position(logTime: time, inputOffset: 7, topic: "s", partition: 1)
        guard case .position(let at, let logTime) = try ChangelogRecords.entry(of: message(position, offset: 1), as: Counter.self)
        else { Issue.record("not a position"); return }
        #expect(at == 7 && logTime == time)

        let marker = ChangelogRecords.marker(nonce: "pod-1-9", topic: "s", partition: 0)
        guard case .marker(let nonce) = try ChangelogRecords.entry(of: message(marker, offset: 2), as: Counter.self)
        else { Issue.record("not a marker"); return }
        #expect(nonce == "pod-1-9")

        // A value that is not what its header says is an error naming where it was read.
        var broken = message(stateRecord, offset: 5)
        broken.value = Array("{}".utf8)
        #expect(throws: ChangelogRecords.ReadError.self) { try ChangelogRecords.entry(of: broken, as: Counter.self) }
    }

    @Test("a position record counts the partition's users for a restore to size its tables; one without the count (builds before, a migration's) reads as unknown")
    func positionCountsUsers() throws {
        let time = Timestamp.at("2026-11-21T09:00:00Z")
        let counted = message(ChangelogRecords.position(logTime: time, inputOffset: 7, users: 42, topic: "s", partition: 0), offset: 0)
        let uncounted = message(ChangelogRecords.position(logTime: time, inputOffset: 7, topic: "s", partition: 0), offset: 1)
        guard case .position(7, time, 42) = try ChangelogRecords.controlEntry(of: counted),
              case .position(7, time, nil) = try ChangelogRecords.controlEntry(of: uncounted)
        else { Issue.record("positions did not read back"); return }
        // The generic reader reads both as before.
        for record in [counted, uncounted] {
            guard case .position(7, time) = try ChangelogRecords.entry(of: record, as: Counter.self) else {
                Issue.record("not a position"); return
            }
        }
        // A state record is not a control entry.
        let state = message(ChangelogRecords.state(
            userId: "u", image: try StateCoding.encode(Counter(count: 1, note: "")), inputOffset: 1, wakeUp: .unrecorded,
            topic: "s", partition: 0), offset: 2)
        #expect(throws: ChangelogRecords.ReadError.self) { try ChangelogRecords.controlEntry(of: state) }
    }

    @Test("the history record holds before, after and the input's coordinates; binary now, JSON as versions before wrote it, both read back")
    func historyRecord() throws {
        let input = SourceCoordinates(topic: "rin.delivery.inbox", partition: 3, offset: 99)
        let legacy = ChangelogRecords.legacyJSONChange(
            userId: "u1", before: nil, after: Array(#"{"count":1,"note":""}"#.utf8), input: input,
            logTime: .at("2026-11-21T09:00:00Z"), topic: "h", partition: 3)
        let text = String(decoding: legacy.value ?? [], as: UTF8.self)
        #expect(text == #"{"after":{"count":1,"note":""},"before":null,"input":{"offset":99,"partition":3,"topic":"rin.delivery.inbox"},"input_offset":99,"log_time":"2026-11-21T09:00:00Z","user_id":"u1","v":1}"#)
        // It is valid JSON.
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])

        // A state with a binary image gets the binary envelope; one without (Counter) the JSON one.
        var before = ScoreState()
        before.lastBatchId = "b-1"
        var after = before
        after.lastScore = 64
        let binary = ChangelogRecords.change(
            userId: "u1", before: try StateCoding.encode(before), after: try StateCoding.encode(after), input: input,
            logTime: .at("2026-11-21T09:00:00Z"), topic: "h", partition: 3)
        #expect(binary.value?.first != UInt8(ascii: "{"))
        let old = try ChangelogRecords.change(of: message(legacy, offset: 0), as: Counter.self)
        #expect(old.userId == "u1" && old.before == nil && old.after == Counter(count: 1, note: "") && old.input == input)
        let new = try ChangelogRecords.change(of: message(binary, offset: 1), as: ScoreState.self)
        #expect(new.userId == "u1" && new.before == before && new.after == after)
        #expect(new.input == input && new.logTime == .at("2026-11-21T09:00:00Z"))
        #expect(try ChangelogRecords.changePlace(of: message(binary, offset: 1)).input == input)
        let counter = ChangelogRecords.change(
            userId: "u1", before: nil, after: try StateCoding.encode(Counter(count: 1, note: "")), input: input,
            logTime: .at("2026-11-21T09:00:00Z"), topic: "h", partition: 3)
        #expect(counter.value == legacy.value)
    }

    @Test("restore's in-place envelope reader agrees with the full decoder on every envelope, and on any bytes returns nil or a range inside them, never traps")
    func peekAgreesAndNeverTraps() async {
        await propertyCheck(count: 400, input: zip(Gen.int64(in: -1...Int64.max), Gen.uint8(in: 0...255).array(of: 0...300))) { offset, bytes in
            let record = ChangelogRecords.state(userId: "u", image: [0x08, 0x01] + bytes, inputOffset: offset, topic: "s", partition: 0)
            let value = record.value ?? []
            let peek = ChangelogRecords.peekState(value)
            #expect(peek?.inputOffset == offset && peek?.format == ChangelogRecords.envelopeFormat)
            #expect(peek.map { Array(value[$0.image]) } == [0x08, 0x01] + bytes)
            let full = try ChangelogRecords.stateImage(of: message(record, offset: 0))
            #expect(full.inputOffset == offset && full.image == [0x08, 0x01] + bytes)
            // Junk: the bytes alone, and the envelope cut anywhere.
            for junk in [bytes, Array(value.prefix(bytes.count / 2)), Array(value.dropLast())] {
                if let found = ChangelogRecords.peekState(junk) {
                    #expect(found.image.lowerBound >= 0 && found.image.upperBound <= junk.count)
                }
            }
        }
    }

    @Test("a state record carries its state's wake-up beside the image; restore's peek reads it, records without one read as unrecorded, and the full reader still reads both")
    func wakeUpRoundTrip() async {
        let wakeUps = zip(Gen.int(in: 0...2), Gen.int64(in: Int64.min...Int64.max)).map { kind, ms -> ChangelogRecords.WakeUp in
            switch kind {
            case 0: .unrecorded
            case 1: .recorded(nil)
            default: .recorded(Timestamp(millisecondsSinceEpoch: ms))
            }
        }
        await propertyCheck(count: 400, input: zip(wakeUps, Gen.int64(in: -1...Int64.max), Gen.uint8(in: 0...255).array(of: 0...60))) { wakeUp, offset, bytes in
            let image: [UInt8] = [0x08, 0x01] + bytes
            let record = ChangelogRecords.state(userId: "u", image: image, inputOffset: offset, wakeUp: wakeUp, topic: "s", partition: 0)
            let peek = ChangelogRecords.peekState(record.value ?? [])
            #expect(peek?.wakeUp == wakeUp && peek?.inputOffset == offset && peek?.format == ChangelogRecords.envelopeFormat)
            #expect(peek.map { Array((record.value ?? [])[$0.image]) } == image)
            let full = try ChangelogRecords.stateImage(of: message(record, offset: 0))
            #expect(full.inputOffset == offset && full.image == image)
        }
    }

    @Test("restore holds undecoded the last committed image of each user whose record recorded its wake-up and decodes the rest; a user's last record decides, whichever build wrote it (rolling upgrade)")
    func collectorHoldsImagesWithWakeUps() async throws {
        func state(_ id: String) -> ScoreState {
            var state = ScoreState()
            state.lastBatchId = id
            return state
        }
        let t = Timestamp.at("2026-11-21T09:00:00Z")
        // (user, state, input offset, wake-up): committed offset 10.
        let records: [(String, ScoreState, Int64, ChangelogRecords.WakeUp)] = [
            ("old-then-new", state("a1"), 1, .unrecorded), ("old-then-new", state("a2"), 2, .recorded(t)),
            ("new-then-old", state("b1"), 3, .recorded(t)), ("new-then-old", state("b2"), 4, .unrecorded),
            ("new-only", state("c1"), 5, .recorded(nil)),
            ("uncommitted-new", state("d1"), 6, .unrecorded), ("uncommitted-new", state("d2"), 12, .recorded(t)),
        ]
        var collector = ChangelogImages(committed: 10, decoding: ScoreState.self)
        for (offset, (user, value, inputOffset, wakeUp)) in records.enumerated() {
            let record = ChangelogRecords.state(
                userId: user, image: try StateCoding.encode(value), inputOffset: inputOffset, wakeUp: wakeUp, topic: "s", partition: 0)
            try collector.read(message(record, offset: Int64(offset)))
        }
        #expect(Set(collector.held.keys) == ["old-then-new", "new-only"])
        #expect(collector.held["old-then-new"]?.wakeUp == t && collector.held["new-only"]?.wakeUp == nil)
        #expect(try collector.held["old-then-new"].map { try StateCoding.decode($0.image, as: ScoreState.self) } == state("a2"))
        let decoded = try await StateRestorer<ScoreState>.decode([0: collector])
        #expect(decoded[0] == ["new-then-old": state("b2"), "uncommitted-new": state("d1")])

        // An image of a format newer than this build reads is not held: decoded at once, it
        // stops the restore naming the format, as before lazy restore.
        var newer = ChangelogImages(committed: 10, decoding: ScoreState.self)
        try newer.read(message(ChangelogRecords.state(
            userId: "newer", image: [0x08, 99], inputOffset: 1, wakeUp: .recorded(t), topic: "s", partition: 0), offset: 0))
        #expect(newer.held.isEmpty && newer.images["newer"] != nil)
        await #expect(throws: StateRestorer<ScoreState>.RestoreError.self) { try await StateRestorer<ScoreState>.decode([0: newer]) }
    }

    struct Hashes: Codable, Hashable, Sendable {
        var hash: UInt64
    }

    @Test("JSON records of the build before keep 64-bit numbers exact when restored and read as history (no generic JSON tree)")
    func legacyRecordsKeepHashes() async throws {
        let state = Hashes(hash: UInt64.max - 12_345)
        let image = try StateCoding.encode(state)
        let record = ChangelogRecords.legacyJSONState(userId: "u", stateJSON: image, inputOffset: 0, topic: "s", partition: 0)
        var collector = ChangelogImages(committed: 1, decoding: Hashes.self)
        try collector.read(message(record, offset: 0))
        let restored = try await StateRestorer<Hashes>.decode([0: collector])
        #expect(restored[0]?["u"] == state)
        let change = ChangelogRecords.legacyJSONChange(
            userId: "u", before: image, after: image, input: SourceCoordinates(topic: "t", partition: 0, offset: 0),
            logTime: .at("2026-11-21T09:00:00Z"), topic: "h", partition: 0)
        let read = try ChangelogRecords.change(of: message(change, offset: 0), as: Hashes.self)
        #expect(read.before == state && read.after == state)
    }

    @Test("a state record written as JSON by a version before binary images reads back like a binary one (rolling upgrade)")
    func legacyStateRecord() throws {
        let state = Counter(count: 7, note: "é")
        let legacy = ChangelogRecords.legacyJSONState(
            userId: "u/2", stateJSON: try StateCoding.encode(state), inputOffset: 12, topic: "s", partition: 0)
        guard case .state(let user, let offset, let decoded) = try ChangelogRecords.entry(of: message(legacy, offset: 0), as: Counter.self)
        else { Issue.record("not a state"); return }
        #expect(user == "u/2" && offset == 12 && decoded == state)
    }

    @Test("restore keeps per user the last state below the committed offset; later ones came from an uncommitted attempt (principle 5)")
    func restoreRule() {
        typealias Builder = StateRestorer<Counter>.Builder
        var builder = Builder(committed: 10)
        builder.apply(.state(userId: "a", inputOffset: 3, state: Counter(count: 1, note: "")))
        builder.apply(.state(userId: "a", inputOffset: 9, state: Counter(count: 2, note: "")))
        builder.apply(.state(userId: "a", inputOffset: 10, state: Counter(count: 99, note: "uncommitted")))
        builder.apply(.state(userId: "b", inputOffset: 12, state: Counter(count: 5, note: "uncommitted")))
        builder.apply(.position(inputOffset: 9, logTime: .at("2026-11-21T09:00:00Z")))
        builder.apply(.position(inputOffset: 11, logTime: .at("2026-11-21T10:00:00Z")))
        builder.apply(.marker(nonce: "x"))
        #expect(builder.states == ["a": Counter(count: 2, note: "")])
        #expect(builder.logTime == .at("2026-11-21T09:00:00Z"))

        // Nothing committed yet: nothing in the changelog is valid.
        var fresh = Builder(committed: nil)
        fresh.apply(.state(userId: "a", inputOffset: 0, state: Counter(count: 1, note: "")))
        #expect(fresh.states.isEmpty)
    }

    @Test("a record's origin: provenance headers when a fleet worker wrote it, else where it was read")
    func origin() {
        let output = OutputRecord(
            topic: Topics.deliveryInbox, timestamp: .at("2026-11-21T09:00:00Z"),
            record: .tick(Tick(id: "t")))
        let step = SourceCoordinates(topic: Topics.scoreBatches, partition: 2, offset: 17)
        let written = KafkaRecords.producerRecord(output, from: step, index: 3, in: TopicNamespace(prefix: "x."))
        #expect(written.topic == "x.rin.delivery.inbox")
        // The runtime hands KafkaRecords messages with logical topic names.
        var read = message(written, offset: 500)
        read.topic = Topics.deliveryInbox
        let origin = KafkaRecords.origin(of: read)
        #expect(origin.coordinates == step && origin.index == 3)

        let activity = KafkaMessage(topic: Topics.appActivity, partition: 1, offset: 8, key: Array("u".utf8), value: [],
                                    timestamp: 5, timestampType: nil)
        let forwarded = KafkaRecords.forward(activity, to: Topics.deliveryInbox, in: TopicNamespace())
        #expect(forwarded.timestamp == 5 && forwarded.key == activity.key)
        let forwardOrigin = KafkaRecords.origin(of: message(forwarded, offset: 70))
        #expect(forwardOrigin.coordinates == SourceCoordinates(topic: Topics.appActivity, partition: 1, offset: 8))
        #expect(forwardOrigin.index == nil)

        let plain = KafkaMessage(topic: Topics.deliveryInbox, partition: 0, offset: 4, key: nil, value: nil, timestamp: nil, timestampType: nil)
        #expect(KafkaRecords.origin(of: plain).coordinates == SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: 4))
    }

    @Test("a record's key must be its user_id: the same bytes, or a key equal to it as a string; any other key, or none, is refused")
    func keyMatchesUserId() throws {
        func decode(userId: String, key: [UInt8]?) -> Result<FleetRecord, RecordError> {
            let value = Array(#"{"entry_source":"organic","id":"a1","type":"app.opened","user_id":"\#(userId)","v":1}"#.utf8)
            let message = KafkaMessage(
                topic: Topics.appActivity, partition: 0, offset: 3, key: key, value: value, timestamp: nil, timestampType: nil)
            return Result { () throws(RecordError) in try KafkaRecords.decode(message) }
        }
        #expect(try decode(userId: "u1", key: Array("u1".utf8)).get().userId == "u1")
        // "é" written precomposed in the value and decomposed in the key: equal as strings.
        #expect(try decode(userId: "\u{e9}", key: Array("e\u{301}".utf8)).get().userId == "\u{e9}")
        for key in [Array("u2".utf8), Array("u1 ".utf8), Array("u".utf8), [], nil] {
            guard case .failure(let error) = decode(userId: "u1", key: key) else {
                Issue.record("key \(String(describing: key)) was taken for user u1")
                continue
            }
            #expect(error.message.contains("differs from user_id 'u1'"), "\(error)")
        }
        let tick = KafkaMessage(
            topic: Topics.deliveryInbox, partition: 0, offset: 4, key: Array("any".utf8),
            value: Array(#"{"id":"t1","type":"tick","v":1}"#.utf8), timestamp: nil, timestampType: nil)
        #expect(try KafkaRecords.decode(tick).type == "tick")
    }

    @Test("ids of a record with an origin index are topic:partition:offset:originIndex:index")
    func originIds() {
        var ids = OutputIDs(origin: SourceCoordinates(topic: "rin.score.batches", partition: 2, offset: 17), originIndex: 1)
        #expect(ids.next() == "rin.score.batches:2:17:1:0")
        #expect(ids.next() == "rin.score.batches:2:17:1:1")
        var plain = OutputIDs(origin: SourceCoordinates(topic: "rin.app.activity", partition: 0, offset: 9))
        #expect(plain.next() == "rin.app.activity:0:9:0")
    }

    @Test("the runtime's settings: guarantee, intervals, port, profile, and their errors")
    func runtimeSettings() throws {
        let defaults = try WorkerSettings(worker: .delivery, environment: [:])
        #expect(defaults.guarantee == .exactlyOnce)
        #expect(defaults.commitInterval == .milliseconds(100))
        #expect(defaults.tickInterval == .milliseconds(1000))
        #expect(defaults.httpPort == 8080 && defaults.profile == "rin")
        let eos = try WorkerSettings(worker: .delivery, environment: ["FLEET_INSTANCE_ID": "delivery-worker-0"])
        #expect(eos.runtimeProducerConfiguration["transactional.id"] == "delivery-worker-delivery-worker-0")
        // Range co-partitions: partition p of every subscribed topic goes to one member.
        #expect(eos.runtimeConsumerConfiguration["partition.assignment.strategy"] == "range")
        // A restored partition joins the next fetch only: the wait bounds how late it starts.
        #expect(eos.runtimeConsumerConfiguration["fetch.wait.max.ms"] == "100")
        #expect(eos.restoreConsumerConfiguration["fetch.wait.max.ms"] == "100")
        let waiting = try WorkerSettings(worker: .delivery, environment: ["KAFKA_FETCH_WAIT_MAX_MS": "500"])
        #expect(waiting.runtimeConsumerConfiguration["fetch.wait.max.ms"] == "500")
        // Prefetch bounded by bytes: librdkafka 2.0's message-count gate parks fetching for up
        // to a second once reached, which small records did within 0.1 s.
        #expect(eos.runtimeConsumerConfiguration["queued.max.messages.kbytes"] == "65536")
        #expect(eos.runtimeConsumerConfiguration["queued.min.messages"] == "10000000")
        let smaller = try WorkerSettings(worker: .delivery, environment: ["KAFKA_QUEUED_MAX_MESSAGES_KBYTES": "16384"])
        #expect(smaller.runtimeConsumerConfiguration["queued.max.messages.kbytes"] == "16384")
        #expect(eos.restoreConsumerConfiguration["group.id"] == "delivery-worker.restore")
        #expect(eos.restoreConsumerConfiguration["group.instance.id"] == nil)
        let alo = try WorkerSettings(worker: .delivery, environment: ["FLEET_GUARANTEE": "at_least_once", "FLEET_TICK_INTERVAL_MS": "0"])
        #expect(alo.runtimeProducerConfiguration["transactional.id"] == nil)
        #expect(alo.tickInterval == nil)
        #expect(throws: SettingsError.self) { try WorkerSettings(worker: .delivery, environment: ["FLEET_GUARANTEE": "twice"]) }
        #expect(throws: SettingsError.self) { try WorkerSettings(worker: .delivery, environment: ["FLEET_HTTP_PORT": "70000"]) }
        #expect(throws: SettingsError.self) { try WorkerSettings(worker: .delivery, environment: ["FLEET_COMMIT_INTERVAL_MS": "0"]) }
    }
}

extension Timestamp {
    static func at(_ text: String) -> Timestamp {
        guard let t = Timestamp(rfc3339: text) else { preconditionFailure("bad literal time \(text)") }
        return t
    }
}
