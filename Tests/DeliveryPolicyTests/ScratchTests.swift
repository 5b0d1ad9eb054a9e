import Testing
@testable import DeliveryPolicy

@Test func scratch() throws {
    var d = try EngineDriver()
    try d.feed("""
    {"at":"2026-03-01T10:00:00Z","value":{"type":"user.signed_up","time_zone":"UTC"}}
    {"at":"2026-03-10T10:00:00Z","value":{"type":"intent","id":"s1","notification":"score.updated","category":"SCORE","data":{"old":72,"new":75,"label":"Good"}}}
    {"at":"2026-03-10T10:00:01Z","value":{"type":"intent","id":"d1","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":3}}}
    {"at":"2026-03-10T10:00:02Z","value":{"type":"intent","id":"e1","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":["Alice"],"contact_ids":["c1"]}}}
    {"at":"2026-03-10T10:00:03Z","value":{"type":"intent","id":"b1","notification":"reminder.birthday","category":"REMINDER","data":{"reminder_id":"rm1","contact_id":"c9","contact_name":"Bob"}}}
    {"at":"2026-03-10T10:00:04Z","value":{"type":"intent","id":"a1","notification":"security.access_request","category":"SECURITY","data":{"request_id":"q1","requester_name":"Carol","field":"phone number"}}}
    """)
    try d.run(until: "2026-03-11T00:00:00Z")
    print(d.summary.joined(separator: "\n"))
    print(d.jsonl.prefix(3).joined(separator: "\n"))
    print(d.errors)
    print(String(decoding: d.states["u1"]!.serialized(), as: UTF8.self))
}
