import FleetModel
import FleetWorkers
import Kafka
import Testing

/// How the workers treat a redriven copy of a dead letter (`fleetctl dlq redrive`): it keeps the
/// coordinates it was dead-lettered at through the ingest stage and a second dead-lettering,
/// and nobody outside the fleet can borrow another record's coordinates with it.
@Suite("Redrive provenance")
struct RedriveProvenanceTests {
    let original = SourceCoordinates(topic: Topics.appActivity, partition: 1, offset: 8)

    func read(_ topic: String, partition: Int32 = 1, offset: Int64, headers: [KafkaHeader]) -> KafkaMessage {
        KafkaMessage(topic: topic, partition: partition, offset: offset, key: Array("u".utf8), value: Array("{}".utf8),
                     headers: headers, timestamp: 5, timestampType: nil)
    }

    func header(_ record: ProducerRecord, _ name: String) -> String? {
        record.headers.first { $0.name == name }?.value.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("a redriven copy on its source topic folds, forwards and dead-letters under its original coordinates (P-IDEM-1)")
    func redrivenCopyKeepsItsCoordinates() {
        let headers = KafkaRecords.redriveHeaders(origin: original, index: nil, redrivenFrom: "rin.app.activity.dlq:1:0")
        let copy = read(Topics.appActivity, offset: 30, headers: headers)
        #expect(KafkaRecords.origin(of: copy).coordinates == original)
        #expect(KafkaRecords.origin(of: copy).index == nil)

        // The ingest stage forwards it with the original coordinates, and the inbox folds it so.
        let forwarded = KafkaRecords.forward(copy, to: Topics.deliveryInbox, in: TopicNamespace(prefix: "x."))
        #expect(header(forwarded, KafkaRecords.Header.sourceOffset) == "8")
        #expect(header(forwarded, KafkaRecords.Header.redrivenFrom) == "rin.app.activity.dlq:1:0")
        let inInbox = KafkaMessage(topic: Topics.deliveryInbox, partition: 1, offset: 99, key: forwarded.key, value: forwarded.value,
                                   headers: forwarded.headers, timestamp: forwarded.timestamp, timestampType: nil)
        #expect(KafkaRecords.origin(of: inInbox).coordinates == original)

        // Failing again, it is dead-lettered under the same identity, with its redrive named.
        let dead = KafkaRecords.deadLetter(copy, error: RecordError("still bad"), in: TopicNamespace())
        #expect(dead.topic == "rin.app.activity.dlq")
        #expect(header(dead, KafkaRecords.Header.sourceTopic) == Topics.appActivity)
        #expect(header(dead, KafkaRecords.Header.sourcePartition) == "1")
        #expect(header(dead, KafkaRecords.Header.sourceOffset) == "8")
        #expect(header(dead, KafkaRecords.Header.sourceIndex) == nil)
        #expect(header(dead, KafkaRecords.Header.redrivenFrom) == "rin.app.activity.dlq:1:0")
    }

    @Test("an inbox record dead-lettered names the origin its ids derive from, index included")
    func inboxDeadLetterNamesItsOrigin() {
        let step = SourceCoordinates(topic: Topics.scoreBatches, partition: 0, offset: 17)
        let written = KafkaRecords.redriveHeaders(origin: step, index: 2, redrivenFrom: "rin.delivery.inbox.dlq:0:4")
        let inbox = read(Topics.deliveryInbox, partition: 0, offset: 40, headers: written)
        #expect(KafkaRecords.origin(of: inbox).coordinates == step && KafkaRecords.origin(of: inbox).index == 2)
        let dead = KafkaRecords.deadLetter(inbox, error: RecordError("unknown notification"), in: TopicNamespace())
        #expect(header(dead, KafkaRecords.Header.sourceTopic) == Topics.scoreBatches)
        #expect(header(dead, KafkaRecords.Header.sourceOffset) == "17")
        #expect(header(dead, KafkaRecords.Header.sourceIndex) == "2")

        // A record with no provenance keeps today's behaviour: where it was read.
        let plain = read(Topics.deliveryInbox, partition: 0, offset: 7, headers: [])
        let plainDead = KafkaRecords.deadLetter(plain, error: RecordError("bad"), in: TopicNamespace())
        #expect(header(plainDead, KafkaRecords.Header.sourceTopic) == Topics.deliveryInbox)
        #expect(header(plainDead, KafkaRecords.Header.sourceOffset) == "7")
    }

    @Test("on an external topic, claimed coordinates count only for a redrive of an earlier record of that same topic")
    func forgedCoordinatesAreIgnored() {
        let readAt = SourceCoordinates(topic: Topics.appActivity, partition: 1, offset: 30)
        func origin(_ headers: [KafkaHeader], topic: String = Topics.appActivity) -> SourceCoordinates {
            KafkaRecords.origin(of: read(topic, offset: 30, headers: headers)).coordinates
        }
        let redrive = KafkaHeader(KafkaRecords.Header.redrivenFrom, "rin.app.activity.dlq:1:0")
        let claim = KafkaRecords.redriveHeaders(origin: original, index: nil, redrivenFrom: "x").dropLast()
        // Provenance without the redrive header: an external producer's claim, ignored.
        #expect(origin(Array(claim)) == readAt)
        // Another topic's coordinates (e.g. a fleet worker's step), even as a "redrive": ignored.
        let foreign = KafkaRecords.redriveHeaders(
            origin: SourceCoordinates(topic: Topics.scoreBatches, partition: 1, offset: 3), index: nil, redrivenFrom: "x")
        #expect(origin(foreign) == readAt)
        // An index (only fleet workers' inbox records have one): ignored.
        #expect(origin(KafkaRecords.redriveHeaders(origin: original, index: 0, redrivenFrom: "x")) == readAt)
        // A later offset of the same partition cannot be a record this one is a copy of.
        let later = KafkaRecords.redriveHeaders(
            origin: SourceCoordinates(topic: Topics.appActivity, partition: 1, offset: 31), index: nil, redrivenFrom: "x")
        #expect(origin(later) == readAt)
        // The real thing.
        #expect(origin(Array(claim) + [redrive]) == original)
        // Another partition is allowed: a data fix of the user id moves the record to its user's partition.
        let moved = KafkaRecords.redriveHeaders(
            origin: SourceCoordinates(topic: Topics.appActivity, partition: 0, offset: 50), index: nil, redrivenFrom: "x")
        #expect(origin(moved) == SourceCoordinates(topic: Topics.appActivity, partition: 0, offset: 50))
    }
}
