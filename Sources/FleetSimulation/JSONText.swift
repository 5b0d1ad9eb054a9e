import FleetModel
import Foundation

/// Canonical JSON text for the simulator's output: the same conventions as `RecordCodec`
/// (sorted keys, unescaped slashes), so two runs over the same input print the same bytes.
enum JSONText {
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(value))
        } catch {
            // Only the simulator's own value types come here, and they always encode.
            preconditionFailure("encoding \(type(of: value)) failed: \(error)")
        }
    }

    static func string(_ value: some Encodable) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    static func decode(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONParser.parse(String(decoding: bytes, as: UTF8.self))
    }

    /// `text` as a JSON string literal, escaped as `JSONEncoder` does.
    static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }
}
