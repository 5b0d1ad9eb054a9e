import FleetModel
import FleetWorkers
import Kafka
import Testing

/// A dead letter always fits (DESIGN.md principle 7): a value over the record limit is carried
/// by reference, anything smaller as it is; the error header never carries the value.
@Suite struct DeadLetterSizeTests {
    func message(key: String, value: [UInt8]) -> KafkaMessage {
        KafkaMessage(
            topic: Topics.reminders, partition: 3, offset: 41, key: Array(key.utf8), value: value, timestamp: 1_000, timestampType: .createTime)
    }

    @Test("over the record limit: a reference naming where, how large, the SHA-256 and the first bytes")
    func byReference() throws {
        let value = Array(#"{"v":1,"type":"reminder.upserted","contact_name":""#.utf8) + Array(repeating: UInt8(ascii: "y"), count: 900_000)
        let letter = KafkaRecords.deadLetter(
            message(key: "u-1", value: value), error: RecordError("record is too large"), in: TopicNamespace(prefix: "p."))
        #expect(letter.topic == "p.rin.reminders.dlq")
        #expect(letter.key == Array("u-1".utf8))
        #expect(letter.headers.contains(KafkaHeader(KafkaRecords.Header.valueOmitted, "reference")))
        #expect(letter.headers.contains(KafkaHeader(KafkaRecords.Header.error, "record is too large")))
        let encoded = try #require(letter.value)
        #expect(encoded.count < 1_024)
        let reference = try #require(DeadLetterReference.decode(encoded))
        #expect(reference.topic == Topics.reminders && reference.partition == 3 && reference.offset == 41)
        #expect(reference.valueBytes == value.count && reference.keyBytes == 3)
        #expect(reference.sha256 == KafkaRecords.sha256Hex(value) && reference.sha256.count == 64)
        #expect(reference.prefix == String(decoding: value.prefix(DeadLetterReference.prefixBytes), as: UTF8.self))
        // The same dead letter is the same bytes every time (crash equivalence, replay).
        let again = KafkaRecords.deadLetter(message(key: "u-1", value: value), error: RecordError("record is too large"), in: TopicNamespace(prefix: "p."))
        #expect(again == letter)
    }

    @Test("within the limit the value is carried as it is; a huge key is left out of a reference")
    func carried() throws {
        let value = Array(repeating: UInt8(ascii: "a"), count: 1_000)
        let letter = KafkaRecords.deadLetter(message(key: "u", value: value), error: RecordError("bad"), in: TopicNamespace(prefix: ""))
        #expect(letter.value == value && !letter.headers.contains { $0.name == KafkaRecords.Header.valueOmitted })
        let hugeKey = String(repeating: "k", count: 300_000)
        let keyed = KafkaRecords.deadLetter(message(key: hugeKey, value: value), error: RecordError("bad"), in: TopicNamespace(prefix: ""))
        #expect(keyed.key == nil)
        #expect(DeadLetterReference.decode(try #require(keyed.value))?.keyBytes == 300_000)
    }

    @Test("SHA-256 is the standard one")
    func sha() {
        #expect(KafkaRecords.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("the broker's refusals of one record are told from failures of the connection")
    func recordSpecific() {
        #expect(KafkaError(code: 10, name: "MSG_SIZE_TOO_LARGE", message: "").isRecordSpecific)
        #expect(KafkaError(code: 87, name: "INVALID_RECORD", message: "").isRecordSpecific)
        #expect(!KafkaError(code: -185, name: "_TIMED_OUT", message: "").isRecordSpecific)
        #expect(!KafkaError(code: -195, name: "_TRANSPORT", message: "").isRecordSpecific)
    }
}
