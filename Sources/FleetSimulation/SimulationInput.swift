public import FleetModel
import Foundation

/// One input line of `fleetctl simulate`:
/// `{"at": "<RFC 3339>", "topic": "<topic>", "key": "<user id>", "value": {<record>}}`.
///
/// `at` is when the record is processed (it stands for the broker timestamp). `key` is the
/// Kafka key and must equal the record's `user_id`; it may be left out, and is then taken to
/// be the record's `user_id` (a `tick` has none). The envelope must be well formed or the run
/// stops; the record inside is only checked later, like a record read from Kafka, and a bad
/// one goes to the dead-letter topic.
public struct SimulationInput: Hashable, Sendable {
    /// 1-based line number in the input, blank lines counted.
    public var line: Int
    public var at: Timestamp
    public var topic: String
    public var key: String?
    /// The record as written, a JSON object.
    public var value: JSONObject

    public init(line: Int, at: Timestamp, topic: String, key: String?, value: JSONObject) {
        self.line = line; self.at = at; self.topic = topic; self.key = key; self.value = value
    }

    /// Parses one line; `nil` for a blank line.
    public static func parse(_ text: some StringProtocol, line: Int) throws(SimulationError) -> SimulationInput? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return nil }
        let envelope: JSONValue
        do {
            envelope = try JSONParser.parse(trimmed)
        } catch {
            throw .malformedLine(line: line, reason: "not valid JSON: \(error.reason) at byte \(error.offset + 1)")
        }
        guard let fields = envelope.objectValue else {
            throw .malformedLine(line: line, reason: "expected a JSON object with 'at', 'topic', 'key' and 'value'")
        }
        func optionalString(_ name: String) throws(SimulationError) -> String? {
            switch fields[name] {
            case nil, .null?: return nil
            case .string(let value)?: return value
            default: throw .malformedLine(line: line, reason: "'\(name)' must be a string")
            }
        }
        func requiredString(_ name: String) throws(SimulationError) -> String {
            guard let value = try optionalString(name) else { throw .malformedLine(line: line, reason: "missing '\(name)'") }
            return value
        }
        let atText = try requiredString("at")
        let topic = try requiredString("topic")
        guard let at = Timestamp(rfc3339: atText) else {
            throw .malformedLine(line: line, reason: "'at' is '\(atText)', not an RFC 3339 time such as 2026-03-02T09:00:00Z")
        }
        guard !topic.isEmpty else { throw .malformedLine(line: line, reason: "'topic' must not be empty") }
        let key = try optionalString("key")
        guard let valueField = fields["value"] else { throw .malformedLine(line: line, reason: "missing 'value'") }
        guard let value = valueField.objectValue else {
            throw .malformedLine(line: line, reason: "'value' must be a JSON object (the record)")
        }
        return SimulationInput(line: line, at: at, topic: topic, key: key, value: value)
    }

    /// The record's bytes as a producer would have written them (canonical, sorted keys).
    var valueBytes: [UInt8] { JSONText.encode(JSONValue.object(value)) }
}
