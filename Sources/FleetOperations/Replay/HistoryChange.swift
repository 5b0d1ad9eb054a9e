import Foundation
public import FleetModel
public import Kafka
import FleetWorkers

/// One record of `<worker>.history` (see `ChangelogRecords.change`): a user's state before and
/// after the folded record at `inputOffset`, and the partition's log time after it.
public struct HistoryChange<State: Codable & Hashable & Sendable>: Sendable {
    public var userId: String
    public var inputOffset: Int64
    public var before: State?
    public var after: State
    public var logTime: Timestamp

    public init(userId: String, inputOffset: Int64, before: State?, after: State, logTime: Timestamp) {
        self.userId = userId; self.inputOffset = inputOffset; self.before = before; self.after = after; self.logTime = logTime
    }

    /// Decodes a history record; throws naming the record when it is not one.
    public init(_ message: KafkaMessage) throws(ReplayError) {
        let place = "\(message.topic)[\(message.partition)]@\(message.offset)"
        let kind = message.header(ChangelogRecords.kindHeader).map { String(decoding: $0, as: UTF8.self) }
        guard kind == ChangelogRecords.Kind.change.rawValue else {
            throw ReplayError("\(place): header \(ChangelogRecords.kindHeader) is '\(kind ?? "missing")', not a history change")
        }
        guard let value = message.value else { throw ReplayError("\(place): history record has no value") }
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: Data(value))
        } catch {
            throw ReplayError("\(place): history record does not decode as this worker's state: \(error)")
        }
        guard let time = Timestamp(rfc3339: envelope.log_time) else {
            throw ReplayError("\(place): bad log_time '\(envelope.log_time)'")
        }
        self.init(userId: envelope.user_id, inputOffset: envelope.input_offset, before: envelope.before, after: envelope.after, logTime: time)
    }

    private struct Envelope: Decodable {
        var user_id: String
        var input_offset: Int64
        var before: State?
        var after: State
        var log_time: String
    }
}
