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
        guard !intents.isEmpty else { return nil }
        // The first and last intents' data, read in place: `intents.first` and `.last` copied
        // both intents (id, type and data) to read one field of each.
        let first = intents[0].data, last = intents[intents.count - 1].data
        var values = TemplateValues(data: first)
        var subjects = 1
        let variant: String
        switch entry.type.merge {
        case .first:
            variant = "one"
        case .latest:
            values = TemplateValues(data: last)
            variant = "one"
        case .sumCount:
            let total = intents.reduce(Int64(0)) { $0 + ($1.data["count"]?.intValue ?? 0) }
            values[.count] = decimal(total)
            subjects = addContacts(intents, to: &values)
            variant = "one"
        case .names:
            let names = strings(in: "names", of: intents, distinct: false)
            values[.name] = names.first ?? ""
            values[.others] = decimal(Int64(max(0, names.count - 1)))
            subjects = max(names.count, addContacts(intents, to: &values))
            variant = names.count == 1 ? "one" : "many"
        case .scoreChange:
            guard let new = last["new"]?.intValue else { return nil }
            let newText = decimal(new)
            values[.new] = newText
            values[.score] = newText
            if let label = last["label"]?.stringValue { values[.label] = label }
            if let old = first["old"]?.intValue {
                let delta = new - old
                if delta == 0 { return nil }
                values[.old] = decimal(old)
                values[.delta] = decimal(delta, plusSign: delta > 0)
                variant = delta > 0 ? "up" : "down"
            } else {
                variant = "first"
            }
        case .contactReminders:
            var names: [String] = []
            for i in intents.indices {
                if let name = intents[i].data["contact_name"]?.stringValue, !names.contains(name) { names.append(name) }
            }
            values[.name] = names.first ?? ""
            subjects = names.count
            switch names.count {
            case 1:
                let note = first["note"]?.stringValue ?? ""
                values[.note] = note
                variant = note.isEmpty && entry.type.copy.value(forKey: "one_without_note") != nil ? "one_without_note" : "one"
            case 2:
                values[.second] = names[1]
                variant = "two"
            default:
                values[.others] = decimal(Int64(names.count - 1))
                variant = "many"
            }
        }
        guard let template = entry.type.copy.value(forKey: variant) else { return nil }
        let link = subjects > 1 ? (entry.type.deepLinkMerged ?? entry.type.deepLink) : entry.type.deepLink
        return RenderedNotification(
            type: entry.type.name, title: entry.type.title.render { values.text(for: $0, slot: $1) },
            body: template.render { values.text(for: $0, slot: $1) }, deepLink: link.render { values.text(for: $0, slot: $1) })
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
        if let first = ids.first, values[.contactId] == nil { values[.contactId] = first }
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
            guard case .array(let elements)? = intents[i].data[field] else { continue }
            for case .string(let text) in elements where !distinct || !out.contains(text) { out.append(text) }
        }
        return out
    }

    /// `value` in decimal, as `String(value)` writes it (with a leading "+" when `plusSign`,
    /// as `"+\(value)"` for a positive one).
    ///
    /// Why by hand: the rendered numbers (counts, scores, deltas) went through the generic
    /// `description` path, and a signed delta through string interpolation, a few hundred
    /// instructions each. The digits are written backwards into a small stack buffer and made
    /// into one string; at most 21 bytes, and a small string (no allocation) up to 15.
    static func decimal(_ value: Int64, plusSign: Bool = false) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { buffer in
            var magnitude = value.magnitude
            var start = buffer.count
            repeat {
                start -= 1
                let (quotient, digit) = magnitude.quotientAndRemainder(dividingBy: 10)
                buffer[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: digit)
                magnitude = quotient
            } while magnitude > 0
            if value < 0 || plusSign {
                start -= 1
                buffer[start] = value < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+")
            }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[start...]), as: UTF8.self)
        }
    }

    /// A scalar field of `data` as text, for `{field}` placeholders; nil for null, lists and objects.
    static func placeholderText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): s
        case .int(let i): decimal(i)
        case .bool(let b): b ? "true" : "false"
        case .double(let d): d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .null, .array, .object: nil
        }
    }
}

/// The placeholder names a merge rule computes (`Renderer.render`), numbered. A template
/// resolves each placeholder's name to its slot once, when the profile loads
/// (`CopyTemplate.Segment`), so rendering finds a computed value by number.
enum ComputedSlot: Int, CaseIterable, Hashable, Sendable {
    case count, contactId, name, others, new, score, label, old, delta, note, second

    /// The slot named `name` (`name` below is the one table of names); read when a profile loads.
    init?(name: String) {
        guard let slot = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = slot
    }

    /// The name, for the `data` field a slot without a computed value falls back to.
    var name: String {
        switch self {
        case .count: "count"
        case .contactId: "contact_id"
        case .name: "name"
        case .others: "others"
        case .new: "new"
        case .score: "score"
        case .label: "label"
        case .old: "old"
        case .delta: "delta"
        case .note: "note"
        case .second: "second"
        }
    }
}

/// The placeholder values of one notification: the scalar fields of an intent's `data` (as
/// `Renderer.placeholderText`), overridden by the values the merge rule computes.
///
/// Why not a `[String: String]`: rendering runs for nearly every decision, and copying every
/// field of `data` into a fresh dictionary cost more than the rendering itself. Fields are
/// converted when a template reads them.
///
/// The computed values sit in one stored property per `ComputedSlot`, found by the slot the
/// template resolved when it was parsed: a list of (name, value) pairs allocated an array per
/// rendering and compared every name a template read with the computed names.
struct TemplateValues {
    private let data: JSONObject
    /// Bit `slot.rawValue` is set once a value was assigned to `slot` (an assigned nil hides
    /// the data field of that name, like a dictionary over the data fields).
    private var assigned: UInt16 = 0
    private var count: String?, contactId: String?, name: String?, others: String?, new: String?, score: String?
    private var label: String?, old: String?, delta: String?, note: String?, second: String?

    init(data: JSONObject) {
        self.data = data
    }

    /// The value of the placeholder `key`, whose slot is `slot`: the computed value if one was
    /// assigned, else the data field's text.
    func text(for key: String, slot: ComputedSlot?) -> String? {
        if let slot, assigned & (1 << slot.rawValue) != 0 { return stored(slot) }
        return data[key].flatMap(Renderer.placeholderText)
    }

    subscript(slot: ComputedSlot) -> String? {
        get { text(for: slot.name, slot: slot) }
        set {
            assigned |= 1 << slot.rawValue
            switch slot {
            case .count: count = newValue
            case .contactId: contactId = newValue
            case .name: name = newValue
            case .others: others = newValue
            case .new: new = newValue
            case .score: score = newValue
            case .label: label = newValue
            case .old: old = newValue
            case .delta: delta = newValue
            case .note: note = newValue
            case .second: second = newValue
            }
        }
    }

    private func stored(_ slot: ComputedSlot) -> String? {
        switch slot {
        case .count: count
        case .contactId: contactId
        case .name: name
        case .others: others
        case .new: new
        case .score: score
        case .label: label
        case .old: old
        case .delta: delta
        case .note: note
        case .second: second
        }
    }
}
