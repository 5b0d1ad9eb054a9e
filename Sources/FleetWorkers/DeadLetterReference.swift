import FleetModel
import Foundation

/// What a dead letter carries instead of a value too large to carry (header `value-omitted:
/// reference`): where the original was read, its sizes, its SHA-256 and its first bytes, so an
/// operator can tell what it was and `fleetctl dlq redrive` can fetch it from the source topic
/// (while that still retains it) and check it is the same record.
public struct DeadLetterReference: Hashable, Sendable, Codable {
    /// The logical topic, partition and offset the original was read at.
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var keyBytes: Int
    public var valueBytes: Int
    /// Lower-case hex SHA-256 of the original value.
    public var sha256: String
    /// The value's first `prefixBytes` bytes (lossy UTF-8).
    public var prefix: String

    /// How many bytes of the original value a reference shows.
    public static let prefixBytes = 256
    /// The `value-omitted` header's value on such a dead letter.
    public static let headerValue = "reference"
    static let type = "dead_letter.reference"

    enum CodingKeys: String, CodingKey {
        case topic = "source_topic", partition = "source_partition", offset = "source_offset", keyBytes = "key_bytes"
        case valueBytes = "value_bytes", sha256, prefix
    }

    public init(topic: String, partition: Int32, offset: Int64, keyBytes: Int, valueBytes: Int, sha256: String, prefix: String) {
        self.topic = topic; self.partition = partition; self.offset = offset; self.keyBytes = keyBytes
        self.valueBytes = valueBytes; self.sha256 = sha256; self.prefix = prefix
    }

    /// Canonical JSON (sorted keys) with `"type":"dead_letter.reference"` and `"v":1`, so the
    /// same dead letter is the same bytes in every re-run.
    public func encoded() -> [UInt8] {
        let object: JSONObject = [
            "v": .int(1), "type": .string(Self.type), "source_topic": .string(topic), "source_partition": .int(Int64(partition)),
            "source_offset": .int(offset), "key_bytes": .int(Int64(keyBytes)), "value_bytes": .int(Int64(valueBytes)),
            "sha256": .string(sha256), "prefix": .string(prefix),
        ]
        do {
            return try CanonicalJSONEncoder.encode(object)
        } catch {
            preconditionFailure("a reference did not encode: \(error)")
        }
    }

    /// The reference a dead letter's value holds, or nil when it is not one.
    public static func decode(_ value: [UInt8]) -> DeadLetterReference? {
        struct Tagged: Decodable {
            var type: String
        }
        let decoder = JSONDecoder()
        guard let tagged = try? decoder.decode(Tagged.self, from: Data(value)), tagged.type == type else { return nil }
        return try? decoder.decode(DeadLetterReference.self, from: Data(value))
    }
}
