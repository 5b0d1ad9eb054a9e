import FleetModel
import Testing

@Suite("Record decoding, validation and canonical encoding")
struct RecordCodecTests {
    func decode(_ json: String, topic: String) -> Result<FleetRecord, RecordError> {
        Result { () throws(RecordError) in try RecordCodec.decode(Array(json.utf8), topic: topic) }
    }

    func error(_ json: String, topic: String) -> String? {
        if case .failure(let e) = decode(json, topic: topic) { return e.message }
        return nil
    }

    /// The topic check reads `Topics.allowedTypes` through its own table (`RecordCodec`'s
    /// `AllowedTypes`): every record type on every topic, a later generation of it and an
    /// unknown topic gets the set's answer.
    @Test("a record is accepted on a topic exactly when Topics.allowedTypes lists its type there")
    func topicCheckFollowsAllowedTypes() {
        var dice = Dice(seed: 19)
        // A valid record of each kind (random fields may break a record's own checks; random
        // section names always do, so a section item is written out).
        var records: [(type: String, bytes: [UInt8])] = [(
            "section.item",
            RecordCodec.encode(.sectionItem(SectionItem(id: "s1", userId: "u1", section: "upcoming", itemId: "i1", item: [:], expiresAt: nil)))
        )]
        for kind in 0..<RecordGen.kinds {
            for _ in 0..<200 {
                let bytes = RecordCodec.encode(RecordGen.record(&dice, kind: kind))
                if case .success(let record) = Result(catching: { () throws(RecordError) in try RecordCodec.decode(bytes) }) {
                    records.append((record.type, bytes))
                    break
                }
            }
        }
        // The sender's records are not generated here; `SenderRecordTests` checks their topics.
        let senderTypes: Set = ["device.registered", "device.unregistered", "device.invalidated", "send.attempt", "send.result", "receipt"]
        let listed = Topics.allowedTypes.values.reduce(into: Set<String>()) { $0.formUnion($1) }.subtracting(senderTypes)
        #expect(Set(records.map(\.type)).isSuperset(of: listed), "no record of \(listed.subtracting(records.map(\.type)))")
        let topics = Topics.allowedTypes.keys.flatMap { [$0, $0 + ".g2", $0 + ".g17"] } + ["elsewhere", "rin.delivery", ""]
        for (type, bytes) in records {
            for topic in topics {
                let allowed = Topics.allowedTypes[Topics.generationBase(of: topic).base]?.contains(type) ?? true
                switch Result(catching: { () throws(RecordError) in try RecordCodec.decode(bytes, topic: topic) }) {
                case .success: #expect(allowed, "\(type) accepted on \(topic)")
                case .failure(let error):
                    #expect(!allowed && error.message == "type '\(type)' does not belong on topic '\(topic)'", "\(type) on \(topic): \(error.message)")
                }
            }
        }
    }

    @Test("an access request decodes, ignoring unknown fields")
    func decodesAccessRequest() throws {
        let json = #"{"v":1,"type":"access.requested","id":"a1","user_id":"u1","request_id":"r1","requester_name":"Dana","field":"phone number","extra":true}"#
        let record = try decode(json, topic: Topics.accessRequests).get()
        guard case .accessRequested(let request) = record else { Issue.record("wrong case"); return }
        #expect(request.requesterName == "Dana")
        #expect(record.userId == "u1")
    }

    @Test("canonical encoding sorts keys and round-trips")
    func canonical() throws {
        let json = #"{"user_id":"u1","v":1,"id":"s1","type":"score.computed","batch_id":"b","computed_at":"2026-11-21T00:00:00Z","score":72,"components":{"trust":1,"quality":2,"position":3,"stability":4}}"#
        let record = try decode(json, topic: Topics.scoreBatches).get()
        let encoded = RecordCodec.encodeString(record)
        #expect(encoded == #"{"batch_id":"b","components":{"position":3,"quality":2,"stability":4,"trust":1},"computed_at":"2026-11-21T00:00:00Z","id":"s1","score":72,"type":"score.computed","user_id":"u1","v":1}"#)
        #expect(try decode(encoded, topic: Topics.scoreBatches).get() == record)
    }

    @Test("errors name the field and the problem", arguments: [
        (#"{"v":1,"type":"access.requested","id":"a","user_id":"u","requester_name":"D","field":"f"}"#,
         Topics.accessRequests, "missing required field 'request_id'"),
        (#"{"v":1,"type":"score.computed","id":"s","user_id":"u","batch_id":"b","computed_at":"2026-11-21T00:00:00Z","score":130,"components":{"quality":1,"position":1,"stability":1,"trust":1}}"#,
         Topics.scoreBatches, "field 'score' is 130, outside 0–100"),
        (#"{"v":1,"type":"score.computed","id":"s","user_id":"u","batch_id":"b","computed_at":"2026-11-21T00:00:00Z","score":50,"components":{"quality":1,"position":1,"stability":1}}"#,
         Topics.scoreBatches, "missing required field 'components.trust'"),
        (#"{"v":1,"type":"score.computed","id":"s","user_id":"u","batch_id":"b","computed_at":"yesterday","score":50,"components":{"quality":1,"position":1,"stability":1,"trust":1}}"#,
         Topics.scoreBatches, "field 'computed_at': 'yesterday' is not an RFC 3339 time"),
        (#"{"v":1,"type":"user.signed_up","id":"x","user_id":"u","time_zone":"Mars/Base"}"#,
         Topics.appActivity, "field 'time_zone': 'Mars/Base' is not an IANA time zone"),
        (#"{"v":1,"type":"app.opened","id":"x","user_id":"u","entry_source":42}"#,
         Topics.appActivity, "field 'entry_source' has the wrong type (expected a string)"),
        (#"{"v":1,"type":"teleport","id":"x","user_id":"u"}"#, Topics.appActivity, "unknown type 'teleport'"),
        (#"{"v":2,"type":"app.opened","id":"x","user_id":"u","entry_source":"organic"}"#, Topics.appActivity, "unsupported version 2"),
        (#"{"v":1,"type":"app.opened","id":"x","user_id":"","entry_source":"organic"}"#, Topics.appActivity, "field 'user_id' must not be empty"),
        (#"{"v":1,"type":"app.opened","id":"x","user_id":"u","entry_source":"organic"}"#, Topics.scoreBatches,
         "type 'app.opened' does not belong on topic 'rin.score.batches'"),
        (#"{"v":1,"type":"reminder.upserted","id":"x","user_id":"u","reminder_id":"r","kind":"birthday","contact_id":"c","contact_name":"Alice","time_zone":"UTC"}"#,
         Topics.reminders, "missing required field 'birthday'"),
        ("{not json", Topics.appActivity, "not valid JSON"),
    ])
    func errors(json: String, topic: String, expected: String) {
        #expect(error(json, topic: topic) == expected)
    }

    @Test("ticks carry no user; every other record must")
    func ticks() throws {
        let record = try decode(#"{"v":1,"type":"tick","id":"t1"}"#, topic: Topics.deliveryInbox).get()
        #expect(record.userId == "")
        #expect(RecordCodec.encodeString(record) == #"{"id":"t1","type":"tick","user_id":"","v":1}"#)
    }

    @Test("output ids derive from log coordinates")
    func outputIDs() {
        var ids = OutputIDs(origin: SourceCoordinates(topic: Topics.deliveryInbox, partition: 3, offset: 42))
        #expect(ids.next() == "rin.delivery.inbox:3:42:0")
        #expect(ids.next() == "rin.delivery.inbox:3:42:1")
    }

    @Test("every topic in the catalog is created, with compaction for state and LogAppendTime for inboxes")
    func topicCatalog() {
        let specs = TopicSpec.all
        #expect(Set(specs.map(\.name)).count == specs.count)
        #expect(specs.first { $0.name == "delivery-worker.state" }?.configs["cleanup.policy"] == "compact")
        #expect(specs.first { $0.name == Topics.deliveryInbox }?.configs["message.timestamp.type"] == "LogAppendTime")
        #expect(specs.contains { $0.name == "rin.app.activity.dlq" })
        // The sender's (issue 17): its inbox, attempts, receipts, the device registry, and the
        // dead letters of what its ingest and effect stage refuse.
        #expect(specs.first { $0.name == Topics.senderInbox }?.configs["message.timestamp.type"] == "LogAppendTime")
        for name in [Topics.devices, Topics.sendAttempts, Topics.receipts, "sender-worker.state", "sender-worker.history"] {
            #expect(specs.contains { $0.name == name }, "\(name)")
        }
        for name in [Topics.devices, Topics.deliveries, Topics.senderInbox, Topics.sendAttempts] {
            #expect(specs.contains { $0.name == Topics.deadLetter(of: name) && $0.role == .deadLetter }, "\(name).dlq")
        }
    }

    @Test("a worker's output topics are ones the fleet creates as outputs or inboxes (its producer looks them up at start)")
    func outputTopicsAreCreated() {
        let writable = Set(TopicSpec.all.filter { $0.role == .output || $0.role == .inbox }.map(\.name))
        for worker in Worker.allCases {
            #expect(!worker.outputTopics.isEmpty, "\(worker)")
            for topic in worker.outputTopics {
                #expect(writable.contains(topic), "\(worker): \(topic)")
                // A worker never writes the log it folds: outputs go downstream.
                #expect(topic != worker.foldedTopic, "\(worker): \(topic)")
            }
        }
        #expect(Worker.delivery.outputTopics == [Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents])
    }
}
