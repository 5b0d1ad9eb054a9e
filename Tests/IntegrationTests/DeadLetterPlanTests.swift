import FleetModel
import FleetOperations
import FleetWorkers
import Kafka
import Testing

/// The redrive rules of `fleetctl dlq` on hand-made DLQ topics, without a broker.
@Suite("Dead-letter plan")
struct DeadLetterPlanTests {
    let dlq = Topics.deadLetter(of: Topics.appActivity)
    let signup = #"{"v":1,"type":"user.signed_up","id":"s-1","user_id":"u","time_zone":"Europe/Berlin"}"#

    func letter(offset: Int64, origin: Int64, value: String, at millis: Int64 = 1_000) -> KafkaMessage {
        KafkaMessage(topic: dlq, partition: 0, offset: offset, key: Array("u".utf8), value: Array(value.utf8), headers: [
            KafkaHeader("error", "bad"), KafkaHeader("source-topic", Topics.appActivity),
            KafkaHeader("source-partition", "0"), KafkaHeader("source-offset", String(origin)),
        ], timestamp: millis, timestampType: nil)
    }

    func marker(offset: Int64, of letter: Int64, copy: Int64) -> KafkaMessage {
        let record = RedriveMarker(
            deadLetter: SourceCoordinates(topic: dlq, partition: 0, offset: letter),
            copy: SourceCoordinates(topic: Topics.appActivity, partition: 0, offset: copy)).record(key: Array("u".utf8), in: TopicNamespace())
        return KafkaMessage(topic: dlq, partition: 0, offset: offset, key: record.key, value: record.value, headers: record.headers,
                            timestamp: 9_000, timestampType: nil)
    }

    @Test("ids parse as list prints them; selection by id and time")
    func idsAndSelection() throws {
        #expect(DeadLetterID("rin.app.activity:3:1812")?.description == "rin.app.activity:3:1812")
        #expect(DeadLetterID("rin.score.batches:0:17:2")?.index == 2)
        #expect(DeadLetterID("rin.app.activity:3") == nil && DeadLetterID("rin.app.activity:x:1") == nil && DeadLetterID(":0:1") == nil)
        let log = DeadLetterLog(topic: Topics.appActivity, messages: [letter(offset: 0, origin: 4, value: "x", at: 1_000), letter(offset: 1, origin: 9, value: "y", at: 5_000)])
        let late = DeadLetterSelection(since: Timestamp(millisecondsSinceEpoch: 2_000))
        #expect(log.entries(matching: late).map(\.letter.id.description) == ["rin.app.activity:0:9"])
        #expect(log.unknownIDs(in: DeadLetterSelection(ids: [try #require(DeadLetterID("rin.app.activity:0:5"))])).count == 1)
        let now = try #require(Timestamp(rfc3339: "2026-11-21T12:00:00Z"))
        #expect(TimeBound.parse("6h", now: now) == Timestamp(rfc3339: "2026-11-21T06:00:00Z"))
        #expect(TimeBound.parse("2026-11-20T00:00:00Z", now: now) == Timestamp(rfc3339: "2026-11-20T00:00:00Z"))
        #expect(TimeBound.parse("6 hours", now: now) == nil)
    }

    @Test("a marker marks its dead letter redriven; a later failure of the copy is pending again (P-IDEM-1)")
    func markersAndRefailures() throws {
        let messages = [letter(offset: 0, origin: 4, value: signup), marker(offset: 1, of: 0, copy: 20), letter(offset: 2, origin: 4, value: signup)]
        let log = DeadLetterLog(topic: Topics.appActivity, messages: messages)
        #expect(log.entries.map(\.isRedriven) == [true, false])
        #expect(log.entries.first?.redrives.first?.copy == SourceCoordinates(topic: Topics.appActivity, partition: 0, offset: 20))
        let id = try #require(DeadLetterID("rin.app.activity:0:4"))
        // The newest dead letter of the id is the one redriven, with its identity and redriven-from.
        let plan = try RedrivePlan(log: log, request: RedriveRequest(selection: DeadLetterSelection(ids: [id])), namespace: TopicNamespace(prefix: "p."))
        let copy = try #require(plan.copies.first)
        #expect(plan.copies.count == 1 && copy.letter.position.offset == 2)
        #expect(copy.record.topic == "p.rin.app.activity" && copy.record.timestamp == 1_000)
        #expect(copy.record.headers.map(\.name) == ["source-topic", "source-partition", "source-offset", "redriven-from"])
        #expect(copy.record.headers.last?.value == Array("rin.app.activity.dlq:0:2".utf8))

        // Only the first one redriven: a second redrive is refused unless forced.
        let once = DeadLetterLog(topic: Topics.appActivity, messages: Array(messages.prefix(2)))
        let refused = try RedrivePlan(log: once, request: RedriveRequest(selection: DeadLetterSelection(ids: [id])), namespace: TopicNamespace())
        #expect(refused.copies.isEmpty && refused.refusals.count == 1)
        let forced = try RedrivePlan(log: once, request: RedriveRequest(selection: DeadLetterSelection(ids: [id]), force: true), namespace: TopicNamespace())
        #expect(forced.copies.count == 1)
    }

    @Test("requests that cannot be meant as given are refused whole")
    func refusedRequests() throws {
        let log = DeadLetterLog(topic: Topics.appActivity, messages: [letter(offset: 0, origin: 4, value: "x"), letter(offset: 1, origin: 5, value: "y")])
        #expect(throws: DeadLetterError.nothingSelected) {
            try RedrivePlan(log: log, request: RedriveRequest(selection: DeadLetterSelection()), namespace: TopicNamespace())
        }
        #expect(throws: DeadLetterError.fixNeedsOneRecord(selected: 2)) {
            try RedrivePlan(log: log, request: RedriveRequest(selection: DeadLetterSelection(), all: true, replacementValue: Array(signup.utf8)), namespace: TopicNamespace())
        }
        // Invalid values as they are become refusals, not errors: the rest still goes.
        let all = try RedrivePlan(log: log, request: RedriveRequest(selection: DeadLetterSelection(), all: true), namespace: TopicNamespace())
        #expect(all.copies.isEmpty && all.refusals.map(\.reason) == Array(repeating: "would be dead-lettered again: not valid JSON (fix the data with --value-file)", count: 2))
        // A fix whose user differs from the key moves to that user: the key follows user_id.
        let moved = #"{"v":1,"type":"user.signed_up","id":"s-1","user_id":"w","time_zone":"UTC"}"#
        let plan = try RedrivePlan(log: log, request: RedriveRequest(
            selection: DeadLetterSelection(ids: [try #require(DeadLetterID("rin.app.activity:0:4"))]), replacementValue: Array(moved.utf8)), namespace: TopicNamespace())
        #expect(plan.copies.first?.record.key == Array("w".utf8))
    }

    @Test("--since/--until select by when a record was dead-lettered (the LogAppendTime stamp), --record-since/--record-until by the record's own time; a dead letter without a dead-letter time falls back to its record's time and is flagged")
    func deadLetterTimeAndRecordTime() throws {
        // As a worker writes it now: the failed record's time in `source-timestamp`, and the
        // broker's append time as the dead letter's own timestamp.
        var appended = letter(offset: 0, origin: 4, value: signup, at: 50_000)
        appended.headers.append(KafkaHeader(KafkaRecords.Header.sourceTimestamp, "1000"))
        appended.timestampType = .logAppendTime
        // As a CreateTime topic (or a broker ignoring LogAppendTime) holds it: no dead-letter time.
        let created = letter(offset: 1, origin: 9, value: signup, at: 2_000)
        let log = DeadLetterLog(topic: Topics.appActivity, messages: [appended, created])
        let first = try #require(log.entries.first?.letter)
        #expect(first.timestamp == Timestamp(millisecondsSinceEpoch: 1_000) && first.deadLetteredAt == Timestamp(millisecondsSinceEpoch: 50_000))
        let second = try #require(log.entries.last?.letter)
        #expect(second.timestamp == Timestamp(millisecondsSinceEpoch: 2_000) && second.deadLetteredAt == nil)

        let recent = DeadLetterSelection(since: Timestamp(millisecondsSinceEpoch: 40_000))
        #expect(log.entries(matching: recent).map(\.letter.id.description) == ["rin.app.activity:0:4"])
        let recentRecords = DeadLetterSelection(recordSince: Timestamp(millisecondsSinceEpoch: 1_500))
        #expect(log.entries(matching: recentRecords).map(\.letter.id.description) == ["rin.app.activity:0:9"])
        let early = DeadLetterSelection(since: Timestamp(millisecondsSinceEpoch: 1_500), until: Timestamp(millisecondsSinceEpoch: 3_000))
        #expect(log.entries(matching: early).map(\.letter.id.description) == ["rin.app.activity:0:9"])
        #expect(early.judgedByRecordTime(second) && !early.judgedByRecordTime(first))
        #expect(!DeadLetterSelection(recordSince: Timestamp(millisecondsSinceEpoch: 0)).judgedByRecordTime(second))

        // A redrive re-sends the record with its own time, not the dead letter's.
        let plan = try RedrivePlan(log: log, request: RedriveRequest(selection: recent), namespace: TopicNamespace())
        #expect(plan.copies.map(\.record.timestamp) == [1_000])
    }

    @Test("a worker's dead letter carries the failed record's timestamp twice: as its own (CreateTime topics) and in source-timestamp (which LogAppendTime keeps)")
    func deadLetterCarriesRecordTime() {
        let failed = KafkaMessage(topic: Topics.appActivity, partition: 2, offset: 7, key: Array("u".utf8), value: Array("{".utf8),
                                  timestamp: 1_234, timestampType: .createTime)
        let record = KafkaRecords.deadLetter(failed, error: RecordError("bad"), in: TopicNamespace())
        #expect(record.timestamp == 1_234)
        #expect(record.headers.contains(KafkaHeader(KafkaRecords.Header.sourceTimestamp, "1234")))
    }

    @Test("replay: a dead letter recorded before source-timestamp existed matches its replay, which has it; a different value still differs")
    func replayForgivesOnlyAnAddedHeader() {
        let base = [KafkaHeader("error", "bad"), KafkaHeader("source-topic", Topics.appActivity)]
        func compared(_ headers: [KafkaHeader]) -> ComparedRecord {
            ComparedRecord(topic: dlq, key: "source 0:4", userId: "u", value: Array("x".utf8), headers: headers, timestamp: 5)
        }
        let replayed = compared(base + [KafkaHeader(KafkaRecords.Header.sourceTimestamp, "5")])
        #expect(compared(base).matches(replayed))
        #expect(replayed.matches(replayed))
        #expect(!compared(base + [KafkaHeader(KafkaRecords.Header.sourceTimestamp, "6")]).matches(replayed))
        #expect(!compared([KafkaHeader("error", "other")]).matches(replayed))
    }
}
