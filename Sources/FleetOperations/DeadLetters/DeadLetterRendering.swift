import Foundation
import FleetModel
import FleetWorkers

/// How `fleetctl dlq` prints dead letters: a table for people, JSON lines for tools, and one
/// record in full.
public enum DeadLetterRendering {
    /// One row per dead letter: when it was dead-lettered, the record's time, id, user, type,
    /// status, error.
    public static func table(_ entries: [DeadLetterLog.Entry]) -> String {
        let header = ["dead-lettered", "record time", "id", "user", "type", "status", "error"]
        var rows = [header]
        for entry in entries {
            let letter = entry.letter
            rows.append([
                letter.deadLetteredAt?.rfc3339 ?? "-", letter.timestamp?.rfc3339 ?? "-", letter.id.description, letter.userId ?? "-", letter.type ?? "-",
                status(entry), oneLine(letter.error),
            ])
        }
        return TextTable.render(rows)
    }

    /// One JSON object per line, keys sorted: `id`, `dead_letter`, `dead_lettered_at`, `time`
    /// (the failed record's), `user_id`, `type`,
    /// `error`, `status`, `redriven_to` (copies, oldest first), `redriven_from`, `key`, `value`
    /// (the value as text; dead letters need not be JSON).
    public static func jsonLines(_ entries: [DeadLetterLog.Entry]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return entries.map { entry in
            let letter = entry.letter
            var object: JSONObject = [
                "id": .string(letter.id.description),
                "dead_letter": .string(letter.position.description),
                "error": .string(letter.error),
                "status": .string(entry.isRedriven ? "redriven" : "pending"),
                "redriven_to": .array(entry.redrives.map { .string($0.copy.description) }),
            ]
            object["time"] = letter.timestamp.map { .string($0.rfc3339) }
            object["dead_lettered_at"] = letter.deadLetteredAt.map { .string($0.rfc3339) }
            object["user_id"] = letter.userId.map { .string($0) }
            object["type"] = letter.type.map { .string($0) }
            object["redriven_from"] = letter.redrivenFrom.map { .string($0) }
            object["key"] = letter.keyText.map { .string($0) }
            object["value"] = letter.value.map { .string(String(decoding: $0, as: UTF8.self)) }
            let data = (try? encoder.encode(JSONValue.object(object))) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }.joined(separator: "\n")
    }

    /// One dead letter in full: identity, position, error, status, key, headers and value
    /// (pretty-printed when it is JSON, as text otherwise).
    public static func show(_ entry: DeadLetterLog.Entry) -> String {
        let letter = entry.letter
        var lines: [[String]] = [
            ["id", letter.id.description],
            ["dead letter", letter.position.description],
            ["dead-lettered", letter.deadLetteredAt?.rfc3339 ?? "- (not recorded: the topic is not LogAppendTime)"],
            ["record time", letter.timestamp?.rfc3339 ?? "-"],
            ["error", letter.error],
            ["status", status(entry)],
        ]
        if let from = letter.redrivenFrom { lines.append(["failed copy of", from]) }
        lines.append(["key", letter.keyText ?? "(none)"])
        for header in letter.headers {
            lines.append(["header", "\(header.name)=\(header.value.map { String(decoding: $0, as: UTF8.self) } ?? "(null)")"])
        }
        if let reference = letter.reference {
            lines.append(["value", "omitted, too large to carry: \(reference.valueBytes) bytes (key \(reference.keyBytes) bytes)"])
            lines.append(["original at", "\(reference.topic)[\(reference.partition)]@\(reference.offset) (redrive fetches it from there)"])
            lines.append(["sha-256", reference.sha256])
            return TextTable.render(lines) + "\nfirst \(DeadLetterReference.prefixBytes) bytes:\n" + reference.prefix
        }
        var text = TextTable.render(lines) + "\nvalue:\n"
        if let json = letter.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            text += (try? encoder.encode(json)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        } else if let value = letter.value {
            text += String(decoding: value, as: UTF8.self) + "\n(not JSON)"
        } else {
            text += "(null)"
        }
        return text
    }

    /// `pending`, or where each copy went.
    static func status(_ entry: DeadLetterLog.Entry) -> String {
        guard !entry.redrives.isEmpty else { return "pending" }
        return "redriven to " + entry.redrives.map(\.copy.description).joined(separator: ", ")
    }

    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
