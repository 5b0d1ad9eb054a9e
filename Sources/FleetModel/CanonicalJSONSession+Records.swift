// The records the fleet writes most (a delivery worker's every output, an upstream worker's
// intents), written member by member in key order without `Encodable`.
//
// Why: through `encode(to:)` each record costs a keyed container per object, generic metadata
// lookups for each container type, and a reordering of the members when the object closes; that
// was a third of the delivery worker's fold (Benchmarks/FoldProfile). Here the keys are written
// already sorted (by UTF-8 bytes, as `closeObject` sorts them), so the bytes are the same:
// `CanonicalJSONEncoderTests.recordsAgree` compares them with `JSONEncoder`'s for every record
// kind, and a key added to one of these types without adding it here fails that test.

extension CanonicalJSONSession {
    /// Writes `record` if it is one of the types written directly; false (nothing written) for
    /// any other, which then goes through `encode(to:)`.
    func writeRecordDirectly(_ record: FleetRecord) throws -> Bool {
        switch record {
        case .decision(let decision): write(decision)
        case .delivery(let delivery): write(delivery)
        case .sectionItem(let item): try write(item)
        case .retentionEvent(let event): try write(event)
        case .intent(let intent): try write(intent)
        default: return false
        }
        return true
    }

    // Keys in UTF-8 byte order, each type's `CodingKeys` merged with the record's `type` and `v`.

    private func write(_ d: Decision) {
        var object = ObjectWriter(self)
        object.member("id") { $0.writeString(d.id) }
        if let intentId = d.intentId { object.member("intent_id") { $0.writeString(intentId) } }
        if let kind = d.kind { object.member("kind") { $0.writeString(kind.rawValue) } }
        if let notificationId = d.notificationId { object.member("notification_id") { $0.writeString(notificationId) } }
        object.member("outcome") { $0.writeString(d.outcome.rawValue) }
        if let reason = d.reason { object.member("reason") { $0.writeString(reason) } }
        object.member("rule") { $0.writeString(d.rule) }
        object.member("type") { $0.writeString("decision") }
        if let until = d.until { object.member("until") { $0.writeTimestamp(until) } }
        object.member("user_id") { $0.writeString(d.userId) }
        object.member("v") { $0.writeInteger(1) }
        object.close()
    }

    private func write(_ d: Delivery) {
        var object = ObjectWriter(self)
        object.member("body") { $0.writeString(d.body) }
        object.member("category") { $0.writeString(d.category) }
        object.member("channel") { $0.writeString(d.channel.rawValue) }
        object.member("deep_link") { $0.writeString(d.deepLink) }
        object.member("id") { $0.writeString(d.id) }
        object.member("merged_intents") { session in
            session.bytes.append(.openBracket)
            for (index, intent) in d.mergedIntents.enumerated() {
                if index > 0 { session.bytes.append(.comma) }
                session.writeString(intent)
            }
            session.bytes.append(.closeBracket)
        }
        object.member("notification") { $0.writeString(d.notification) }
        object.member("notification_id") { $0.writeString(d.notificationId) }
        object.member("title") { $0.writeString(d.title) }
        object.member("type") { $0.writeString("delivery") }
        object.member("user_id") { $0.writeString(d.userId) }
        object.member("v") { $0.writeInteger(1) }
        object.close()
    }

    private func write(_ s: SectionItem) throws {
        var object = ObjectWriter(self)
        if let expiresAt = s.expiresAt { object.member("expires_at") { $0.writeTimestamp(expiresAt) } }
        object.member("id") { $0.writeString(s.id) }
        try object.member("item") { try $0.writeJSONObject(s.item) }
        object.member("item_id") { $0.writeString(s.itemId) }
        object.member("section") { $0.writeString(s.section) }
        object.member("type") { $0.writeString("section.item") }
        object.member("user_id") { $0.writeString(s.userId) }
        object.member("v") { $0.writeInteger(1) }
        object.close()
    }

    private func write(_ e: RetentionEvent) throws {
        var object = ObjectWriter(self)
        object.member("event") { $0.writeString(e.event) }
        object.member("id") { $0.writeString(e.id) }
        try object.member("properties") { try $0.writeJSONObject(e.properties) }
        object.member("type") { $0.writeString("retention.event") }
        object.member("user_id") { $0.writeString(e.userId) }
        object.member("v") { $0.writeInteger(1) }
        object.close()
    }

    private func write(_ i: Intent) throws {
        var object = ObjectWriter(self)
        object.member("category") { $0.writeString(i.category) }
        try object.member("data") { try $0.writeJSONObject(i.data) }
        if let expiresAt = i.expiresAt { object.member("expires_at") { $0.writeTimestamp(expiresAt) } }
        object.member("id") { $0.writeString(i.id) }
        object.member("notification") { $0.writeString(i.notification) }
        object.member("source") { session in
            var source = ObjectWriter(session)
            source.member("offset") { $0.writeInteger(i.source.offset) }
            source.member("partition") { $0.writeInteger(Int64(i.source.partition)) }
            source.member("topic") { $0.writeString(i.source.topic) }
            source.close()
        }
        object.member("type") { $0.writeString("intent") }
        object.member("user_id") { $0.writeString(i.userId) }
        object.member("v") { $0.writeInteger(1) }
        object.close()
    }

    /// Writes `{"key":value,…}` for members given in key order.
    private struct ObjectWriter {
        let session: CanonicalJSONSession
        var first = true

        init(_ session: CanonicalJSONSession) {
            self.session = session
            session.bytes.append(.openBrace)
        }

        /// `key` is plain ASCII, needing no escape.
        @inline(__always)
        mutating func member(_ key: StaticString, _ value: (CanonicalJSONSession) throws -> Void) rethrows {
            if !first { session.bytes.append(.comma) }
            first = false
            session.bytes.append(.quote)
            key.withUTF8Buffer { session.bytes.append(contentsOf: $0) }
            session.bytes.append(.quote)
            session.bytes.append(.colon)
            try value(session)
        }

        func close() { session.bytes.append(.closeBrace) }
    }
}
