import FleetModel

/// Intents as the upstream workers write them (DESIGN.md intent.data table).
enum Fixtures {
    static let source = SourceCoordinates(topic: "test.source", partition: 0, offset: 0)

    static func scoreIntent(id: String, user: String, old: Int64, new: Int64) -> Intent {
        Intent(id: id, userId: user, notification: "score.updated", category: "SCORE",
               data: ["old": .int(old), "new": .int(new), "label": "Good"], source: source)
    }

    static func dedupIntent(id: String, user: String, count: Int64) -> Intent {
        Intent(id: id, userId: user, notification: "contacts.dedup_ready", category: "CONTACTS",
               data: ["count": .int(count)], source: source)
    }

    static func enrichmentIntent(id: String, user: String, names: [String]) -> Intent {
        Intent(id: id, userId: user, notification: "contacts.enrichment", category: "CONTACTS",
               data: ["names": .array(names.map { .string($0) }), "contact_ids": .array(names.map { .string("c-" + $0) })],
               source: source)
    }

    static func securityIntent(id: String, user: String) -> Intent {
        Intent(id: id, userId: user, notification: "security.new_signin", category: "SECURITY",
               data: ["detail": "New sign-in from Firefox on Linux."], source: source)
    }
}
