public import Kafka
import FleetWorkers

/// One record a worker wrote (or a replay would write), as replay compares it: where it goes,
/// what identifies it there, and every byte a consumer sees.
///
/// `key` identifies the record within its topic: the fleet record's `id` for outputs,
/// `user@input_offset` for history changes, `source_offset` for dead letters.
public struct ComparedRecord: Hashable, Sendable {
    public var topic: String
    public var key: String
    public var userId: String
    public var value: [UInt8]
    public var headers: [KafkaHeader]
    /// The record's timestamp in milliseconds; nil where the broker sets it (`LogAppendTime`),
    /// which a replay cannot reproduce and does not compare.
    public var timestamp: Int64?

    public init(topic: String, key: String, userId: String, value: [UInt8], headers: [KafkaHeader], timestamp: Int64?) {
        self.topic = topic; self.key = key; self.userId = userId; self.value = value; self.headers = headers
        self.timestamp = timestamp
    }

    /// A record the replay would produce (logical topic names).
    public init(_ record: ProducerRecord, key: String) {
        self.init(
            topic: record.topic, key: key, userId: record.key.map { String(decoding: $0, as: UTF8.self) } ?? "",
            value: record.value ?? [], headers: record.headers, timestamp: record.timestamp)
    }

    /// A record read back (logical topic names).
    public init(_ message: KafkaMessage, key: String) {
        self.init(
            topic: message.topic, key: key, userId: message.key.map { String(decoding: $0, as: UTF8.self) } ?? "",
            value: message.value ?? [], headers: message.headers,
            timestamp: message.timestampType == .logAppendTime ? nil : message.timestamp)
    }

    /// Where it is compared: (topic, key).
    public var slot: Slot { Slot(topic: topic, key: key) }

    public struct Slot: Hashable, Sendable, Comparable, CustomStringConvertible {
        public var topic: String
        public var key: String
        public static func < (lhs: Slot, rhs: Slot) -> Bool { (lhs.topic, lhs.key) < (rhs.topic, rhs.key) }
        public var description: String { "\(topic) \(key)" }
    }

    /// Whether `replayed` is what this recorded record says, byte for byte: value, headers, user
    /// key and, unless the broker set it, timestamp.
    public func matches(_ replayed: ComparedRecord) -> Bool {
        value == replayed.value && headersMatch(replayed.headers) && userId == replayed.userId
            && (timestamp == nil || timestamp == replayed.timestamp)
    }

    /// Headers a later build added to records it writes, which a record written before that
    /// build lacks: a range recorded then still replays `identical` when every other byte is.
    /// Only their absence is forgiven; a recorded header with a different value differs.
    static let headersAddedSince: Set<String> = [KafkaRecords.Header.sourceTimestamp]

    private func headersMatch(_ replayed: [KafkaHeader]) -> Bool {
        if headers == replayed { return true }
        let added = replayed.filter { Self.headersAddedSince.contains($0.name) }
        guard !added.isEmpty, !headers.contains(where: { Self.headersAddedSince.contains($0.name) }) else { return false }
        return headers == replayed.filter { !Self.headersAddedSince.contains($0.name) }
    }

    /// The value as text, with what else differs from `other` when it is not the value.
    func describe(against other: ComparedRecord?) -> String {
        var text = String(decoding: value, as: UTF8.self)
        guard let other else { return text }
        if userId != other.userId { text += " key=\(userId)" }
        if headers != other.headers {
            text += " headers=[" + headers.map { "\($0.name)=\($0.value.map { String(decoding: $0, as: UTF8.self) } ?? "null")" }
                .joined(separator: ",") + "]"
        }
        if let timestamp, let theirs = other.timestamp, timestamp != theirs { text += " timestamp=\(timestamp)" }
        return text
    }
}
