public import FleetModel

/// The part of a user's history `fleetctl explain` shows: steps whose log time lies in
/// `[since, until)`. Either bound may be open.
public struct TimeWindow: Hashable, Sendable {
    public var since: Timestamp?
    public var until: Timestamp?

    public init(since: Timestamp? = nil, until: Timestamp? = nil) {
        self.since = since
        self.until = until
    }

    /// Everything retained.
    public static let all = TimeWindow()

    public func contains(_ time: Timestamp) -> Bool {
        if let since, time < since { return false }
        if let until, time >= until { return false }
        return true
    }

    /// Parses a `--since` / `--until` argument: an RFC 3339 time (`2026-11-21T09:00:00Z`), or a
    /// span back from `now` (`90m`, `24h`, `7d`), which an on-call engineer types more often.
    ///
    /// `now` is a parameter, not a clock read: the command passes the wall clock, tests a fixed time.
    public static func bound(_ text: String, now: Timestamp) throws(TimeWindowError) -> Timestamp {
        guard let time = TimeBound.parse(text, now: now) else { throw TimeWindowError(argument: text) }
        return time
    }
}

public struct TimeWindowError: Error, CustomStringConvertible, Sendable {
    public var argument: String
    public var description: String {
        "'\(argument)' is neither an RFC 3339 time such as 2026-11-21T09:00:00Z nor a span back from now such as 90m, 24h or 7d (s, m, h, d)"
    }
}
