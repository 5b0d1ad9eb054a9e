/// Why a record cannot be processed. The message is written for the operator who reads the
/// dead-letter topic's `error` header: it names the field and the problem.
public struct RecordError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

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
