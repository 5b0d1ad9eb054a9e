import FleetModel

/// A notification's user-facing text and link.
struct RenderedNotification: Hashable, Sendable {
    var type: String
    var title: String
    var body: String
    var deepLink: String
}

/// Renders intents of one type into one notification with the type's merge rule (P-COAL-1)
/// and the profile's copy (P-CAT-2 deep links).
///
/// Types are read through their `CatalogEntry`, field by field: a `NotificationType` argument
/// made every caller copy the whole type (a retain and a release of each of its strings and
/// collections) for the few fields a rendering reads.
enum Renderer {
    /// Nil when the merged intents have nothing to say (a score that moved and came back).
    static func render(_ entry: CatalogEntry, _ intents: [PendingIntent]) -> RenderedNotification? {
        guard let first = intents.first, let last = intents.last else { return nil }
        var values = TemplateValues(data: first.data)
        var subjects = 1
        let variant: String
        switch entry.type.merge {
        case .first:
            variant = "one"
        case .latest:
            values = TemplateValues(data: last.data)
            variant = "one"
        case .sumCount:
            let total = intents.reduce(Int64(0)) { $0 + ($1.data.value(forKey: "count")?.intValue ?? 0) }
            values["count"] = String(total)
            subjects = addContacts(intents, to: &values)
            variant = "one"
        case .names:
            let names = strings(in: "names", of: intents, distinct: false)
            values["name"] = names.first ?? ""
            values["others"] = String(max(0, names.count - 1))
            subjects = max(names.count, addContacts(intents, to: &values))
            variant = names.count == 1 ? "one" : "many"
        case .scoreChange:
            guard let new = last.data.value(forKey: "new")?.intValue else { return nil }
            values["new"] = String(new)
            values["score"] = String(new)
            if let label = last.data.value(forKey: "label")?.stringValue { values["label"] = label }
            if let old = first.data.value(forKey: "old")?.intValue {
                let delta = new - old
                if delta == 0 { return nil }
                values["old"] = String(old)
                values["delta"] = delta > 0 ? "+\(delta)" : String(delta)
                variant = delta > 0 ? "up" : "down"
            } else {
                variant = "first"
            }
        case .contactReminders:
            var names: [String] = []
            for i in intents.indices {
                if let name = intents[i].data.value(forKey: "contact_name")?.stringValue, !names.contains(name) { names.append(name) }
            }
            values["name"] = names.first ?? ""
            subjects = names.count
            switch names.count {
            case 1:
                let note = first.data.value(forKey: "note")?.stringValue ?? ""
                values["note"] = note
                variant = note.isEmpty && entry.type.copy.value(forKey: "one_without_note") != nil ? "one_without_note" : "one"
            case 2:
                values["second"] = names[1]
                variant = "two"
            default:
                values["others"] = String(names.count - 1)
                variant = "many"
            }
        }
        guard let template = entry.type.copy.value(forKey: variant) else { return nil }
        let link = subjects > 1 ? (entry.type.deepLinkMerged ?? entry.type.deepLink) : entry.type.deepLink
        return RenderedNotification(
            type: entry.type.name, title: entry.type.title.render { values[$0] }, body: template.render { values[$0] },
            deepLink: link.render { values[$0] })
    }

    /// Renders a notification the engine makes itself (digest, lapse tiers).
    static func renderGenerated(_ entry: CatalogEntry, variant: String, values: [String: String]) -> RenderedNotification? {
        guard let template = entry.type.copy.value(forKey: variant) else { return nil }
        return RenderedNotification(
            type: entry.type.name, title: entry.type.title.render(values), body: template.render(values),
            deepLink: entry.type.deepLink.render(values))
    }

    /// `contact_ids` of all intents, in order: `{contact_id}` is the first; returns how many
    /// distinct contacts there are.
    private static func addContacts(_ intents: [PendingIntent], to values: inout TemplateValues) -> Int {
        let ids = strings(in: "contact_ids", of: intents, distinct: true)
        if let first = ids.first, values["contact_id"] == nil { values["contact_id"] = first }
        return ids.count
    }

    /// The strings of the list `field` of every intent's `data`, in order (without repeats when
    /// `distinct`). Non-string elements and non-list fields are skipped.
    ///
    /// Why a loop: `flatMap` / `compactMap` built two temporary arrays per intent, and merged
    /// windows hold dozens of intents.
    private static func strings(in field: String, of intents: [PendingIntent], distinct: Bool) -> [String] {
        var out: [String] = []
        // Lists usually hold a name or two per intent: one allocation instead of one per doubling.
        out.reserveCapacity(2 * intents.count)
        // By index: `for intent in intents` copied every intent (a retain and a release of its
        // id, type and data) to read one field of it.
        for i in intents.indices {
            guard case .array(let elements)? = intents[i].data.value(forKey: field) else { continue }
            for case .string(let text) in elements where !distinct || !out.contains(text) { out.append(text) }
        }
        return out
    }

    /// A scalar field of `data` as text, for `{field}` placeholders; nil for null, lists and objects.
    static func placeholderText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): s
        case .int(let i): String(i)
        case .bool(let b): b ? "true" : "false"
        case .double(let d): d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .null, .array, .object: nil
        }
    }
}

/// The placeholder values of one notification: the scalar fields of an intent's `data` (as
/// `Renderer.placeholderText`), overridden by the values the merge rule computes.
///
/// Why not a `[String: String]`: rendering runs for nearly every decision, and copying every
/// field of `data` into a fresh dictionary cost more than the rendering itself. Fields are
/// converted when a template reads them, and the few computed values are scanned linearly.
struct TemplateValues {
    private let data: JSONObject
    private var computed: [(key: String, value: String?)] = []

    init(data: JSONObject) {
        self.data = data
    }

    subscript(key: String) -> String? {
        get {
            if let i = computed.firstIndex(where: { $0.key == key }) { return computed[i].value }
            return data.value(forKey: key).flatMap(Renderer.placeholderText)
        }
        set {
            // Like a dictionary over the data fields: nil hides a field.
            if let i = computed.firstIndex(where: { $0.key == key }) {
                computed[i].value = newValue
            } else {
                // Room for the most a merge rule computes (score change: five) at the first
                // value, so `first` and `latest` (which compute none) allocate nothing.
                if computed.isEmpty { computed.reserveCapacity(6) }
                computed.append((key, newValue))
            }
        }
    }
}
