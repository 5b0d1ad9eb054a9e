import FleetModel
import Yams

/// A YAML node together with its dotted path, so every validation error names the field.
///
/// Profiles are read from `Yams.Node` rather than through `Decodable` because the errors must
/// be written for an operator ("lapse.dormant_days: must be greater than lapse.value_reminder_days
/// (30), got 20"), and unknown keys must be reported (a typo would otherwise silently fall back
/// to a default).
struct YAMLField {
    let node: Node
    let path: String

    func fail(_ problem: String) -> ProfileError { ProfileError(field: path, problem: problem) }

    private func describe() -> String {
        switch node {
        case .scalar(let s): "'\(s.string)'"
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    /// The entries of a mapping, in document order, rejecting keys outside `allowed`.
    func mapping(allowed: Set<String>? = nil, ignoring ignored: Set<String> = []) throws(ProfileError) -> [(key: String, value: YAMLField)] {
        guard case .mapping(let mapping) = node else { throw fail("expected a mapping, got \(describe())") }
        var entries: [(key: String, value: YAMLField)] = []
        var seen: Set<String> = []
        for (keyNode, valueNode) in mapping {
            guard let key = keyNode.string else { throw fail("keys must be strings") }
            let childPath = path.isEmpty ? key : "\(path).\(key)"
            if ignored.contains(key) { continue }
            if let allowed, !allowed.contains(key) {
                throw ProfileError(field: childPath, problem: "unknown field (expected one of: \(allowed.sorted().joined(separator: ", ")))")
            }
            guard seen.insert(key).inserted else { throw ProfileError(field: childPath, problem: "appears twice") }
            entries.append((key, YAMLField(node: valueNode, path: childPath)))
        }
        return entries
    }

    /// A mapping as a lookup table for `required` / `optional`.
    func object(allowed: Set<String>, ignoring ignored: Set<String> = []) throws(ProfileError) -> YAMLObject {
        YAMLObject(path: path, entries: try mapping(allowed: allowed, ignoring: ignored))
    }

    func list() throws(ProfileError) -> [YAMLField] {
        guard case .sequence(let sequence) = node else { throw fail("expected a list, got \(describe())") }
        return sequence.enumerated().map { YAMLField(node: $0.element, path: "\(path)[\($0.offset)]") }
    }

    func string() throws(ProfileError) -> String {
        guard case .scalar(let scalar) = node else { throw fail("expected text, got \(describe())") }
        return scalar.string
    }

    func nonEmptyString() throws(ProfileError) -> String {
        let s = try string()
        if s.isEmpty { throw fail("must not be empty") }
        return s
    }

    func int(atLeast minimum: Int? = nil, atMost maximum: Int? = nil) throws(ProfileError) -> Int {
        guard case .scalar(let scalar) = node, let value = Int(scalar.string) else {
            throw fail("expected a whole number, got \(describe())")
        }
        if let minimum, value < minimum { throw fail("must be at least \(minimum), got \(value)") }
        if let maximum, value > maximum { throw fail("must be at most \(maximum), got \(value)") }
        return value
    }

    func bool() throws(ProfileError) -> Bool {
        guard case .scalar(let scalar) = node else { throw fail("expected true or false, got \(describe())") }
        switch scalar.string {
        case "true": return true
        case "false": return false
        default: throw fail("expected true or false, got '\(scalar.string)'")
        }
    }

    func timeOfDay() throws(ProfileError) -> LocalTimeOfDay {
        let text = try string()
        guard let time = LocalTimeOfDay(Substring(text)) else { throw fail("expected a time HH:MM (00:00–23:59), got '\(text)'") }
        return time
    }

    func strings() throws(ProfileError) -> [String] {
        var out: [String] = []
        for item in try list() { out.append(try item.nonEmptyString()) }
        return out
    }

    func template() throws(ProfileError) -> CopyTemplate {
        let text = try nonEmptyString()
        do {
            return try CopyTemplate(parsing: text)
        } catch {
            throw fail(error.message)
        }
    }

    /// Copy follows §6.4: facts, no exclamation marks, no emoji.
    func copy() throws(ProfileError) -> CopyTemplate {
        let template = try template()
        if template.source.contains("!") { throw fail("copy must not contain exclamation marks (§6.4), got '\(template.source)'") }
        if template.source.unicodeScalars.contains(where: { $0.properties.isEmojiPresentation || ($0.properties.isEmoji && $0.value > 0x2000) }) {
            throw fail("copy must not contain emoji (§6.4), got '\(template.source)'")
        }
        return template
    }
}

/// The entries of one YAML mapping, read by key.
struct YAMLObject {
    let path: String
    let entries: [(key: String, value: YAMLField)]

    func optional(_ key: String) -> YAMLField? { entries.first { $0.key == key }?.value }

    func required(_ key: String) throws(ProfileError) -> YAMLField {
        guard let field = optional(key) else {
            throw ProfileError(field: path.isEmpty ? key : "\(path).\(key)", problem: "missing required field")
        }
        return field
    }

    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}
