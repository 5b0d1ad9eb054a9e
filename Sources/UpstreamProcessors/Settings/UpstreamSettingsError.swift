/// Why a profile's `upstream:` section was refused. The message names the setting by its full
/// path (`upstream.score.change_threshold`), the problem and the line, so the worker can stop
/// at start with it (P-PROF-1).
public struct UpstreamSettingsError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
