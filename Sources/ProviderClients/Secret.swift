/// A credential read from configuration. Prints as `<redacted>` wherever it is interpolated,
/// logged or dumped, so no secret reaches a log by accident; `reveal` is the one way to it.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    private let value: String

    public init(_ value: String) { self.value = value }

    /// The credential itself, for the one place that sends it.
    public var reveal: String { value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}
