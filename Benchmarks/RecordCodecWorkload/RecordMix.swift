import FleetModel

/// A realistic mix of encoded records as the workers read them from Kafka: activity records
/// (the bulk of the traffic), intents with free-form `data`, score batches, contact sync results
/// with enrichment arrays, section items and retention events.
public struct RecordMix: Sendable {
    /// Each record's canonical bytes and the topic it is read from.
    public let records: [(bytes: [UInt8], topic: String)]

    public var totalBytes: Int { records.reduce(0) { $0 + $1.bytes.count } }

    /// `count` records; the same count always gives the same records.
    public static func make(count: Int) -> RecordMix {
        let base = Timestamp(millisecondsSinceEpoch: 1_772_442_000_000)  // 2026-03-02T09:00:00Z
        let berlin = Zone(identifier: "Europe/Berlin")
        var records: [(bytes: [UInt8], topic: String)] = []
        records.reserveCapacity(count)
        for n in 0..<count {
            let user = "user-\(n % 5_000)"
            let id = "rec-\(n)"
            let at = Timestamp(millisecondsSinceEpoch: base.millisecondsSinceEpoch + Int64(n) * 1_000)
            let source = SourceCoordinates(topic: Topics.deliveryInbox, partition: Int32(n % 12), offset: Int64(n))
            let record: FleetRecord
            let topic: String
            switch n % 10 {
            case 0, 1:
                topic = Topics.deliveryInbox
                record = .intent(Intent(
                    id: id, userId: user, notification: "score.updated", category: "score",
                    data: ["score": .int(Int64(40 + n % 60)), "previous": .int(Int64(35 + n % 50)), "delta": .double(2.5),
                           "components": ["trust": 71, "quality": 64], "contact_name": "Dana Smith",
                           "tags": ["weekly", "push"], "urgent": false],
                    expiresAt: at, source: source))
            case 2:
                topic = Topics.scoreBatches
                record = .scoreComputed(ScoreComputed(
                    id: id, userId: user, batchId: "batch-\(n / 100)", computedAt: at, score: n % 101,
                    components: .init(quality: n % 97, position: n % 89, stability: n % 83, trust: n % 79)))
            case 3:
                topic = Topics.syncResults
                record = .contactsSyncCompleted(ContactsSyncCompleted(
                    id: id, userId: user, syncId: "sync-\(n)", completedAt: at, added: n % 7, updated: n % 5, removed: 1,
                    autoMerged: 2, newDedupSuggestions: 3, unreviewedDedupSuggestions: 4, oldestUnreviewedDedupAt: at,
                    enrichment: (0..<4).map { .init(contactId: "c-\(n)-\($0)", name: "Contact \($0)") },
                    conflicts: [.init(contactId: "c-\(n)-9", name: "Lee", field: "phone")]))
            case 4:
                topic = Topics.deliveryInbox
                record = .sectionItem(SectionItem(
                    id: id, userId: user, section: "enrichment_updates", itemId: "item-\(n)",
                    item: ["contact_id": .string("c-\(n)"), "fields": ["phone", "email"], "count": 2], expiresAt: at))
            case 5:
                topic = Topics.deliveryInbox
                record = .retentionEvent(RetentionEvent(
                    id: id, userId: user, event: "retention.quiet_mode_entered",
                    properties: ["days_inactive": 14, "ratio": 0.25, "reason": "inactivity"]))
            case 6:
                topic = Topics.appActivity
                record = .settingsChanged(SettingsChanged(
                    id: id, userId: user, timeZone: berlin, pushEnabled: true, emailOptIn: false,
                    disabledCategories: ["digest"]))
            case 7:
                topic = Topics.appActivity
                record = .userAction(UserAction(id: id, userId: user, action: "contact.edited"))
            default:
                topic = Topics.appActivity
                record = .appOpened(AppOpened(id: id, userId: user, entrySource: .notification, notificationId: "n-\(n)"))
            }
            records.append((RecordCodec.encode(record), topic))
        }
        return RecordMix(records: records)
    }

    /// Decodes every record once; returns how many decoded (all of them, or the mix is broken).
    public func decodeAll() -> Int {
        var decoded = 0
        for (bytes, topic) in records {
            if (try? RecordCodec.decode(bytes, topic: topic)) != nil { decoded += 1 }
        }
        return decoded
    }

    /// The decoded records, for the encoding measurement.
    public func decoded() -> [FleetRecord] {
        records.compactMap { try? RecordCodec.decode($0.bytes, topic: $0.topic) }
    }
}
