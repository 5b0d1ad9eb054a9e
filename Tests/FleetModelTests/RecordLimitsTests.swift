import FleetModel
import Testing

/// The record contract's sizes (DESIGN.md principle 7): every known field and list has a
/// maximum, checked before anything is decoded, and errors quote values short.
@Suite struct RecordLimitsTests {
    func error(_ json: String, topic: String) -> String? {
        do {
            _ = try RecordCodec.decode(Array(json.utf8), topic: topic)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("each kind of field at its limit decodes, one byte over is refused naming the field and the limit", arguments: [
        ("contact_name", RecordLimits.nameBytes), ("reminder_id", RecordLimits.identifierBytes), ("note", RecordLimits.freeTextBytes),
        ("contact_id", RecordLimits.identifierBytes),
    ])
    func fieldLimits(field: String, limit: Int) {
        func reminder(_ value: String) -> String {
            var fields: [String: String] = [
                "contact_name": "Ines", "reminder_id": "r", "note": "n", "contact_id": "c",
            ]
            fields[field] = value
            return #"{"v":1,"type":"reminder.upserted","id":"x","user_id":"u","reminder_id":"\#(fields["reminder_id"]!)","kind":"birthday","contact_id":"\#(fields["contact_id"]!)","contact_name":"\#(fields["contact_name"]!)","time_zone":"UTC","birthday":"03-04","note":"\#(fields["note"]!)"}"#
        }
        #expect(error(reminder(String(repeating: "a", count: limit)), topic: Topics.reminders) == nil)
        #expect(error(reminder(String(repeating: "a", count: limit + 1)), topic: Topics.reminders)
            == "field '\(field)' is \(limit + 1) bytes, over its limit of \(limit) bytes")
    }

    @Test("lists: the named maximum, and the default inside free-form data")
    func listLimits() {
        let enrichment = (0...1_000).map { #"{"contact_id":"c\#($0)","name":"N"}"# }.joined(separator: ",")
        let sync = #"{"v":1,"type":"contacts.sync_completed","id":"s","user_id":"u","sync_id":"s","completed_at":"2026-11-21T00:00:00Z","added":0,"updated":0,"removed":0,"auto_merged":0,"new_dedup_suggestions":0,"unreviewed_dedup_suggestions":0,"enrichment":[\#(enrichment)],"conflicts":[]}"#
        #expect(error(sync, topic: Topics.syncResults) == "field 'enrichment' has 1001 elements, over its limit of 1000")
        let many = (0...1_000).map { "\($0)" }.joined(separator: ",")
        let intent = #"{"v":1,"type":"intent","id":"i","user_id":"u","notification":"x","category":"C","data":{"whatever":[\#(many)]},"source":{"topic":"t","partition":0,"offset":0}}"#
        #expect(error(intent, topic: Topics.deliveryInbox) == "field 'data.whatever' has 1001 elements, over its limit of 1000")
        let members = (0...64).map { #""k\#($0)":1"# }.joined(separator: ",")
        let wide = #"{"v":1,"type":"intent","id":"i","user_id":"u","notification":"x","category":"C","data":{\#(members)},"source":{"topic":"t","partition":0,"offset":0}}"#
        #expect(error(wide, topic: Topics.deliveryInbox) == "field 'data' has 65 members, over its limit of 64")
        let text = String(repeating: "t", count: RecordLimits.freeTextBytes + 1)
        let long = #"{"v":1,"type":"intent","id":"i","user_id":"u","notification":"x","category":"C","data":{"anything":"\#(text)"},"source":{"topic":"t","partition":0,"offset":0}}"#
        #expect(error(long, topic: Topics.deliveryInbox) == "field 'data.anything' is 1025 bytes, over its limit of 1024 bytes")
    }

    @Test("unknown top-level fields are ignored whatever their size; only the record size bounds them")
    func unknownFields() {
        let big = String(repeating: "u", count: 200_000)
        let json = #"{"v":1,"type":"app.opened","id":"a","user_id":"u","entry_source":"organic","attachment":"\#(big)","more":[\#((0..<5_000).map(String.init).joined(separator: ","))]}"#
        #expect(error(json, topic: Topics.appActivity) == nil)
        let limits = RecordLimits.standard
        #expect(throws: RecordError("record is 300001 bytes (key 1, value 300000), over the limit of 262144 bytes (FLEET_MAX_RECORD_BYTES)")) {
            try limits.checkRecordSize(keyBytes: 1, valueBytes: 300_000)
        }
        #expect(throws: Never.self) { try limits.checkRecordSize(keyBytes: 4, valueBytes: 262_140) }
    }

    @Test("errors quote values short and escaped, with their length; no message carries a value in full")
    func quoting() {
        #expect(RecordError.quote("abc") == "'abc'")
        #expect(RecordError.quote("it's\n\u{07}") == #"'it\'s\n\u{7}'"#)
        let long = String(repeating: "y", count: 900_000)
        #expect(RecordError.quote(long) == "'" + String(repeating: "y", count: 64) + "…' (900000 bytes)")
        #expect(RecordError(long).message.utf8.count <= RecordError.maxMessageCharacters)
        // An enum field with a value within its limit still quotes it short.
        let json = #"{"v":1,"type":"app.opened","id":"a","user_id":"u","entry_source":"\#(String(repeating: "q", count: 120))"}"#
        let message = error(json, topic: Topics.appActivity) ?? ""
        #expect(message.hasPrefix("field 'entry_source': Cannot initialize EntrySource from invalid String value '"))
        #expect(message.hasSuffix("…' (120 bytes)"))
        #expect(error(#"{"v":1,"type":"\#(String(repeating: "t", count: 100))","id":"a","user_id":"u"}"#, topic: Topics.appActivity)
            == "unknown type '" + String(repeating: "t", count: 64) + "…' (100 bytes)")
    }

    @Test("nesting deeper than the limit is refused")
    func depth() {
        let nested = String(repeating: #"{"a":"#, count: 20) + "1" + String(repeating: "}", count: 20)
        let json = #"{"v":1,"type":"intent","id":"i","user_id":"u","notification":"x","category":"C","data":\#(nested),"source":{"topic":"t","partition":0,"offset":0}}"#
        #expect(error(json, topic: Topics.deliveryInbox)?.contains("is nested deeper than 16 levels") == true)
    }
}
