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

    /// The room kept below `maxStateBytes` for what timers add to a state (a deferral's end, a
    /// digest or tier notification scheduled): a record may leave its user's state at most
    /// `maxStateBytes - stateHeadroom`, so timers, which cannot be refused, stay under the bound.
    public var stateHeadroom: Int { maxStateBytes / 16 }

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

    /// Per known field name, its string limit and its list limit, in one table so a member
    /// costs one lookup.
    private struct FieldLimit {
        var bytes: Int?
        var elements: Int?
    }

    private static let byName: [String: FieldLimit] = {
        var table: [String: FieldLimit] = [:]
        for (name, bytes) in fieldBytes { table[name, default: FieldLimit()].bytes = bytes }
        for (name, elements) in listElements { table[name, default: FieldLimit()].elements = elements }
        return table
    }()

    /// A broken limit; its path is built only on the way out (the common case, nothing broken,
    /// builds no strings: the check runs on every record a worker reads).
    private struct Violation: Error {
        enum Kind {
            case bytes(Int, limit: Int)
            case elements(Int, limit: Int)
            case members(Int, limit: Int)
            case depth
        }
        var kind: Kind
        /// Innermost first: field names and `[index]`s.
        var reversedPath: [String] = []

        func inside(_ component: String) -> Violation {
            var copy = self
            copy.reversedPath.append(component)
            return copy
        }

        var error: RecordError {
            var path = ""
            for component in reversedPath.reversed() {
                if component.hasPrefix("[") || path.isEmpty { path += component } else { path += "." + component }
            }
            switch kind {
            case .bytes(let n, let limit): return RecordError("field '\(path)' is \(n) bytes, over its limit of \(limit) bytes")
            case .elements(let n, let limit): return RecordError("field '\(path)' has \(n) elements, over its limit of \(limit)")
            case .members(let n, let limit): return RecordError("field '\(path)' has \(n) members, over its limit of \(limit)")
            case .depth: return RecordError("field '\(path)' is nested deeper than \(RecordLimits.maxDepth) levels")
            }
        }
    }

    /// Checks every known field of a parsed record against the tables above, before anything is
    /// decoded from it, so that no later error, log line or output ever holds an oversized value.
    ///
    /// Cost: one table lookup per string, list or object member; unknown scalar members of
    /// declared objects are skipped without one.
    func checkFields(_ node: JSONNode) throws(RecordError) {
        guard case .object(let members) = node else { return }
        do {
            try Self.check(members: members, freeForm: false, depth: 1)
        } catch {
            throw error.error
        }
    }

    /// No string limit is below this, and no list limit below `shortestList`: shorter values
    /// need no lookup, which keeps the common record (short strings, short lists) to a walk.
    static let shortestString = min(fieldBytes.values.min() ?? 0, freeTextBytes)
    static let shortestList = min(listElements.values.min() ?? 0, defaultListElements)

    private static func check(members: [(key: String, value: JSONNode)], freeForm: Bool, depth: Int) throws(Violation) {
        for (key, value) in members {
            switch value {
            case .string(let text):
                let length = text.utf8.count
                guard length > shortestString, let limit = byName[key]?.bytes ?? (freeForm ? freeTextBytes : nil) else { continue }
                if length > limit { throw Violation(kind: .bytes(length, limit: limit), reversedPath: [key]) }
            case .array(let elements):
                // Known list (or a list in free-form data, or a list where a string is declared):
                // counted; an unknown list of a declared object is ignored like any unknown field.
                if elements.count > shortestList {
                    let known = byName[key]
                    if let limit = known?.elements ?? (freeForm || known?.bytes != nil ? defaultListElements : nil),
                       elements.count > limit
                    {
                        throw Violation(kind: .elements(elements.count, limit: limit), reversedPath: [key])
                    }
                }
                do {
                    try check(elements: elements, field: key, freeForm: freeForm, depth: depth + 1)
                } catch {
                    throw error.inside(key)
                }
            case .object(let inner):
                // The free-form objects, whose members are not declared one by one.
                let isFreeForm = freeForm || key == "data" || key == "item" || key == "properties"
                if depth + 1 > maxDepth { throw Violation(kind: .depth, reversedPath: [key]) }
                if isFreeForm && inner.count > freeFormMembers {
                    throw Violation(kind: .members(inner.count, limit: freeFormMembers), reversedPath: [key])
                }
                do {
                    try check(members: inner, freeForm: isFreeForm, depth: depth + 1)
                } catch {
                    throw error.inside(key)
                }
            default:
                continue
            }
        }
    }

    /// The elements of the list named `field`: strings take the field's limit (or free text's).
    private static func check(elements: [JSONNode], field: String, freeForm: Bool, depth: Int) throws(Violation) {
        if depth > maxDepth { throw Violation(kind: .depth) }
        for (index, element) in elements.enumerated() {
            switch element {
            case .string(let text):
                let length = text.utf8.count
                guard length > shortestString, let limit = byName[field]?.bytes ?? (freeForm ? freeTextBytes : nil) else { continue }
                if length > limit { throw Violation(kind: .bytes(length, limit: limit), reversedPath: ["[\(index)]"]) }
            case .object(let inner):
                if depth + 1 > maxDepth { throw Violation(kind: .depth, reversedPath: ["[\(index)]"]) }
                if freeForm && inner.count > freeFormMembers {
                    throw Violation(kind: .members(inner.count, limit: freeFormMembers), reversedPath: ["[\(index)]"])
                }
                do {
                    try check(members: inner, freeForm: freeForm, depth: depth + 1)
                } catch {
                    throw error.inside("[\(index)]")
                }
            case .array(let nested):
                if nested.count > defaultListElements {
                    throw Violation(kind: .elements(nested.count, limit: defaultListElements), reversedPath: ["[\(index)]"])
                }
                do {
                    try check(elements: nested, field: field, freeForm: freeForm, depth: depth + 1)
                } catch {
                    throw error.inside("[\(index)]")
                }
            default:
                continue
            }
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
