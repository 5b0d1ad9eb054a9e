public import DeliveryPolicy

/// `fleetctl explain`: reads one user's partition and builds the user's timeline. The command
/// and the tests call this one function, so what is tested is what operators run.
public enum Explainer {
    /// The timeline of `user` within `window`, its state lines in `profile`'s numbers (the
    /// profile the delivery worker runs with; only the daily budget, default quiet hours and
    /// digest threshold are read from it).
    public static func explain(
        user: String, window: TimeWindow, profile: PolicyProfile, reader: FleetTopicReader
    ) async throws -> UserTimeline {
        let log = try await UserLog.read(user: user, from: reader)
        return UserTimeline(log: log, window: window, profile: profile)
    }
}
