/// Why a record cannot be processed. The message is written for the operator who reads the
/// dead-letter topic's `error` header: it names the field and the problem.
public struct RecordError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    /// Messages longer than `maxMessageCharacters` are cut, naming their length: an error is
    /// copied into a dead letter's header and a log line, and must never carry a record's
    /// content in full (see `quote(_:limit:)`).
    public init(_ message: String) {
        if message.utf8.count <= Self.maxMessageCharacters {
            self.message = message
        } else {
            self.message = String(message.prefix(Self.maxMessageCharacters - 48)) + "… (message cut: \(message.utf8.count) bytes)"
        }
    }

    public var description: String { message }

    static func missing(_ field: String) -> RecordError { RecordError("missing required field '\(field)'") }
    static func outOfRange(_ field: String, _ value: some CustomStringConvertible, _ range: String) -> RecordError {
        RecordError("field '\(field)' is \(value), outside \(range)")
    }
    static func empty(_ field: String) -> RecordError { RecordError("field '\(field)' must not be empty") }
}

/// A record payload of one `type`, with its own validation beyond what decoding checks.
public protocol RecordPayload: Codable, Hashable, Sendable {
    /// The record's `type` value.
    static var typeNames: [String] { get }
    var id: String { get }
    var userId: String { get }
    func validate() throws(RecordError)
}

extension RecordPayload {
    public func validate() throws(RecordError) {}
}

@inline(__always)
func requireNonEmpty(_ value: String, _ field: String) throws(RecordError) {
    if value.isEmpty { throw .empty(field) }
}

@inline(__always)
func requireRange<T: Comparable & CustomStringConvertible>(_ value: T, _ range: ClosedRange<T>, _ field: String) throws(RecordError) {
    if !range.contains(value) { throw .outOfRange(field, value, "\(range.lowerBound)–\(range.upperBound)") }
}
