import FleetModel
import Testing
import UpstreamProcessors

private let topic = Topics.accessRequests

private func request(_ requestId: String, id: String, requester: String = "Dana Levi", field: String = "home address") -> FleetRecord {
    .accessRequested(AccessRequested(id: id, userId: "u1", requestId: requestId, requesterName: requester, field: field))
}

@Suite("Access worker")
struct AccessProcessorTests {
    @Test("P-ACC-1 an access request raises security.access_request immediately plus a needs_attention item")
    func accessRequest() throws {
        var h = Harness(AccessProcessor(), topic: topic)
        let now = at("2026-05-04T23:30:00Z")
        let out = try h.process(request("req-9", id: "rec-1"), at: now)
        #expect(out == [
            Expect.intent(
                "rin.security.access-requests:0:0:0", "security.access_request", "SECURITY",
                ["request_id": "req-9", "requester_name": "Dana Levi", "field": "home address"],
                source: source(topic, 0), at: now),
            Expect.item(
                "rin.security.access-requests:0:0:1", section: "needs_attention", itemId: "access_request:req-9",
                ["kind": "access_request", "request_id": "req-9", "requester_name": "Dana Levi", "field": "home address"],
                at: now),
        ])
    }

    @Test("P-ACC-1 the same request id twice gives one notification")
    func duplicateRequest() throws {
        var h = Harness(AccessProcessor(), topic: topic)
        try h.process(request("req-9", id: "rec-1"), at: at("2026-05-04T10:00:00Z"))
        let repeated = try h.process(request("req-9", id: "rec-2"), at: at("2026-05-04T10:00:01Z"))
        #expect(repeated.isEmpty)
        let other = try h.process(request("req-10", id: "rec-3"), at: at("2026-05-04T10:00:02Z"))
        #expect(other.compactMap(\.intent).map(\.data) == [
            ["request_id": "req-10", "requester_name": "Dana Levi", "field": "home address"],
        ])
    }

    @Test("P-ACC-1 remembered request ids are bounded; the oldest is forgotten first")
    func boundedMemory() throws {
        var h = Harness(AccessProcessor(settings: AccessSettings(rememberedRequestIds: 2)), topic: topic)
        for (i, r) in ["a", "b", "c"].enumerated() {
            try h.process(request(r, id: "rec-\(i)"), at: at("2026-05-04T10:00:00Z") + .seconds(Int64(i)))
        }
        #expect(h.state.seen.keys == ["request:b", "request:c"])
        #expect(try h.process(request("c", id: "rec-x"), at: at("2026-05-04T11:00:00Z")).isEmpty)
        #expect(try h.process(request("a", id: "rec-y"), at: at("2026-05-04T11:00:01Z")).count == 2)
    }

    @Test("§6.2 new sign-in and suspicious activity raise their SECURITY intents with the detail")
    func securityAlerts() throws {
        var h = Harness(AccessProcessor(), topic: topic)
        let t1 = at("2026-05-04T10:00:00Z")
        let t2 = at("2026-05-04T10:01:00Z")
        let a = try h.process(.securityNewSignin(SecurityAlert(id: "s1", userId: "u1", detail: "iPhone 16, Lisbon")), at: t1)
        let b = try h.process(.securitySuspiciousActivity(SecurityAlert(id: "s2", userId: "u1", detail: "5 failed logins")), at: t2)
        let again = try h.process(.securityNewSignin(SecurityAlert(id: "s1", userId: "u1", detail: "iPhone 16, Lisbon")), at: t2)
        #expect(a == [Expect.intent(
            "rin.security.access-requests:0:0:0", "security.new_signin", "SECURITY", ["detail": "iPhone 16, Lisbon"],
            source: source(topic, 0), at: t1)])
        #expect(b == [Expect.intent(
            "rin.security.access-requests:0:1:0", "security.suspicious_activity", "SECURITY", ["detail": "5 failed logins"],
            source: source(topic, 1), at: t2)])
        #expect(again.isEmpty)
    }

    @Test("Invalid access requests are rejected")
    func invalid() {
        var h = Harness(AccessProcessor(), topic: topic)
        #expect(throws: RecordError("field 'requester_name' must not be empty")) {
            try h.process(request("r", id: "x", requester: ""), at: at("2026-05-04T10:00:00Z"))
        }
    }
}
