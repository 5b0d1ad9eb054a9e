public import DeliveryPolicy
import FleetModel
import FleetWorkers

/// `fleetctl explain`: reads one user's partition and builds the user's timeline. The command
/// and the tests call this one function, so what is tested is what operators run.
public enum Explainer {
    /// The timeline of `user` within `window`, its state lines in `profile`'s numbers (the
    /// profile the delivery worker runs with; only the daily budget, default quiet hours and
    /// digest threshold are read from it).
    ///
    /// Every generation of the delivery worker's log that exists is read: 1 through the one the
    /// registry (`fleet.generations`) names, including one whose cutover is still in progress
    /// (its log already holds the records carried over). Then the sender's topics, for the
    /// attempts and receipts of the deliveries shown (`SenderLog`; a fleet without the sender
    /// has none, which is said, not an error).
    public static func explain(
        user: String, window: TimeWindow, profile: PolicyProfile, reader: FleetTopicReader
    ) async throws -> UserTimeline {
        let registry = try await GenerationRegistry.read(configuration: reader.configuration, namespace: reader.namespace, logger: reader.logger)
        let log = try await UserLog.read(
            user: user, from: reader, generations: registry.entry(for: .delivery).generation, since: window.since,
            profile: profile)
        var timeline = UserTimeline(log: log, window: window, profile: profile)
        timeline.sends = try await SenderLog.read(user: user, deliveryIds: timeline.deliveryIds, from: reader, since: window.since)
        return timeline
    }
}
