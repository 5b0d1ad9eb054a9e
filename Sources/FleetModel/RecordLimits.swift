/// Sizes as part of the record contract (DESIGN.md principle 7, "Sizes are part of the
/// contract"): the largest record a worker accepts, the longest string each known field may
/// hold, the most elements a list may have, and the largest output and state image a worker
/// writes.
///
/// Why a contract and not just the broker's limit: a record the broker accepted can still make
/// a worker write something the broker refuses (a dead letter carrying the value plus an error
/// that quotes it, a history record holding two copies of a state that copied it). Refusing the
/// record at the edge, with the field and the limit named, keeps every later write bounded; the
/// output and state bounds are the fold's last line (`LogFolding`), checked before anything is
/// produced, so a re-run and a replay refuse exactly the same record.
public struct RecordLimits: Hashable, Sendable {
    /// The largest record (key plus value) a worker folds or forwards; larger ones are
    /// dead-lettered by reference. `FLEET_MAX_RECORD_BYTES`.
    public var maxRecordBytes: Int
    /// The largest output record value a step may write (a delivery, a decision, an intent…).
    /// `FLEET_MAX_OUTPUT_BYTES`.
    public var maxOutputBytes: Int
    /// The largest encoded user state a step may leave behind (one changelog image; a history
    /// record holds at most two). `FLEET_MAX_STATE_BYTES`.
    public var maxStateBytes: Int

    /// Defaults: a quarter of the broker's default `message.max.bytes` (1 000 000) each, so a
    /// history record (before and after image) and a dead letter with its headers still fit.
    public static let standard = RecordLimits(maxRecordBytes: 262_144, maxOutputBytes: 262_144, maxStateBytes: 262_144)

    /// What any configured limit must lie in: a record of the contract's largest fields must fit,
    /// and two state images plus an envelope must stay under the broker's default 1 000 000.
    public static let allowedRange = 16_384...450_000

    public init(maxRecordBytes: Int, maxOutputBytes: Int, maxStateBytes: Int) {
        self.maxRecordBytes = maxRecordBytes
        self.maxOutputBytes = maxOutputBytes
        self.maxStateBytes = maxStateBytes
    }

    /// Refuses a record whose key and value together exceed `maxRecordBytes`, before any of it
    /// is parsed.
    public func checkRecordSize(keyBytes: Int, valueBytes: Int) throws(RecordError) {
        let total = keyBytes + valueBytes
        if total > maxRecordBytes {
            throw RecordError(
                "record is \(total) bytes (key \(keyBytes), value \(valueBytes)), over the limit of \(maxRecordBytes) bytes (FLEET_MAX_RECORD_BYTES)")
        }
    }

    // MARK: Fields

    /// The longest string (UTF-8 bytes) a field of this name may hold, wherever it appears in a
    /// record. Fields not named here: free text inside `data`, `item` and `properties` takes
    /// `freeTextBytes`; unknown top-level fields are ignored (only the record size bounds them).
    public static let fieldBytes: [String: Int] = {
        var table: [String: Int] = [:]
        for name in [
            "id", "user_id", "batch_id", "sync_id", "reminder_id", "contact_id", "request_id", "notification_id",
            "item_id", "intent_id", "device_id", "topic",
        ] { table[name] = identifierBytes }
        for name in ["contact_name", "requester_name", "name"] { table[name] = nameBytes }
        for name in [
            "type", "notification", "category", "kind", "section", "event", "entry_source", "permission", "status",
            "recurrence", "time_zone", "birthday", "fire_at_local", "start", "end", "channel", "label", "field", "action",
            "computed_at", "completed_at", "oldest_unreviewed_dedup_at", "expires_at", "scheduled_local",
        ] { table[name] = codeBytes }
        for name in ["note", "detail", "title", "body", "deep_link"] { table[name] = freeTextBytes }
        return table
    }()

    /// The most elements a list of this name may hold. Lists not named here (inside free-form
    /// objects) take `listElements`.
    public static let listElements: [String: Int] = [
        "enrichment": 1_000, "conflicts": 1_000, "names": 1_000, "contact_ids": 1_000, "merged_intents": 1_000,
        "intent_ids": 1_000, "disabled_categories": 32,
    ]

    /// Ids: record ids, user ids, contact and reminder ids, notification ids.
    public static let identifierBytes = 128
    /// People's names as shown in copy.
    public static let nameBytes = 256
    /// Type names, enum values, times, zones, short labels.
    public static let codeBytes = 128
    /// Notes, details, copy, and any string inside `data`, `item` or `properties`.
    public static let freeTextBytes = 1_024
    /// Any list inside a free-form object.
    public static let defaultListElements = 1_000
    /// Members of a free-form object (`data`, `item`, `properties`).
    public static let freeFormMembers = 64
    /// Nesting of arrays and objects in a record.
    public static let maxDepth = 16

    /// The free-form objects whose members are not declared one by one.
    static let freeForm: Set<String> = ["data", "item", "properties"]

    /// Checks every known field of a parsed record against the tables above, before anything is
    /// decoded from it, so that no later error, log line or output ever holds an oversized value.
    func checkFields(_ node: JSONNode) throws(RecordError) {
        guard case .object(let members) = node else { return }
        for (key, value) in members {
            try check(value, field: key, path: key, freeForm: false, depth: 1)
        }
    }

    private func check(_ node: JSONNode, field: String, path: String, freeForm: Bool, depth: Int) throws(RecordError) {
        if depth > Self.maxDepth {
            throw RecordError("field '\(path)' is nested deeper than \(Self.maxDepth) levels")
        }
        switch node {
        case .string(let text):
            guard let limit = Self.fieldBytes[field] ?? (freeForm ? Self.freeTextBytes : nil) else { return }
            let length = text.utf8.count
            if length > limit {
                throw RecordError("field '\(path)' is \(length) bytes, over its limit of \(limit) bytes")
            }
        case .array(let elements):
            let known = Self.listElements[field]
            guard let limit = known ?? (freeForm || Self.fieldBytes[field] != nil ? Self.defaultListElements : nil) else {
                // An unknown top-level list: ignored like any unknown field.
                return
            }
            if elements.count > limit {
                throw RecordError("field '\(path)' has \(elements.count) elements, over its limit of \(limit)")
            }
            for (index, element) in elements.enumerated() {
                try check(element, field: field, path: "\(path)[\(index)]", freeForm: freeForm, depth: depth + 1)
            }
        case .object(let members):
            let isFreeForm = freeForm || Self.freeForm.contains(field)
            if isFreeForm && members.count > Self.freeFormMembers {
                throw RecordError("field '\(path)' has \(members.count) members, over its limit of \(Self.freeFormMembers)")
            }
            for (key, value) in members {
                // Inside a declared object only its known members are checked; inside a free-form
                // one every member is.
                if !isFreeForm && Self.fieldBytes[key] == nil && Self.listElements[key] == nil, !Self.isContainer(value) {
                    continue
                }
                try check(value, field: key, path: "\(path).\(key)", freeForm: isFreeForm, depth: depth + 1)
            }
        default:
            return
        }
    }

    private static func isContainer(_ node: JSONNode) -> Bool {
        switch node {
        case .array, .object: true
        default: false
        }
    }
}

extension RecordError {
    /// How an error message shows a value it was given: a short prefix, escaped, and its length
    /// when it was cut. User content does not belong in logs and headers in full (it can be
    /// large, and it is personal data).
    public static func quote(_ value: some StringProtocol, limit: Int = 64) -> String {
        var out = "'"
        var shown = 0
        var cut = false
        for scalar in value.unicodeScalars {
            if shown >= limit {
                cut = true
                break
            }
            switch scalar {
            case "'": out += "\\'"
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            shown += 1
        }
        out += cut ? "…' (\(value.utf8.count) bytes)" : "'"
        return out
    }

    /// The longest error message kept (a header, a log line): longer ones are cut with their
    /// length named. A safety net behind `quote`, for messages built from library errors.
    public static let maxMessageCharacters = 512
}
