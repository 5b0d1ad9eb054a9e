public import FleetModel
import Foundation

/// One worker of the simulated fleet: a processor folding one topic (DESIGN.md principle 3),
/// emulated as partition 0 of that topic.
///
/// The simulator only sees stages through this protocol, so any `UserProcessor` plugs in
/// through `FoldStage` and the simulator never needs to know the concrete workers.
public protocol SimulationStage: Sendable {
    /// The worker's name, e.g. `delivery-worker`; unique within a fleet, used in snapshots.
    var name: String { get }
    /// The topic whose log the stage folds, e.g. `rin.delivery.inbox`.
    var foldedTopic: String { get }
    /// External topics the worker's ingest stage forwards into `foldedTopic`, e.g.
    /// `rin.app.activity` for the delivery worker.
    var ingestTopics: [String] { get }
    /// The stage's log time (`nil` before its first record).
    var logTime: Timestamp? { get }
    /// The earliest due time of any of its users' timers.
    var nextWakeUp: Timestamp? { get }

    /// Folds one record of `foldedTopic` (see `PartitionFold.apply`). `coordinates` and
    /// `originIndex` are the record's identity for ids: where it was read, or where it came from
    /// for a record forwarded or produced into the log by the fleet (see `OutputIDs`).
    mutating func apply(
        _ record: FleetRecord, timestamp: Timestamp, coordinates: SourceCoordinates, originIndex: Int?, firstIndex: Int
    ) -> StageStep
    /// Lets time pass to `time`, firing due timers (see `PartitionFold.advance`).
    mutating func advance(to time: Timestamp, origin: SourceCoordinates, firstIndex: Int) -> StageStep

    /// The user's time zone, if this stage's state knows it; the summary counts days in it.
    func zone(ofUser userId: String) -> Zone?

    /// The stage's state, for `Simulator.snapshot()`.
    func snapshot() -> StageSnapshot
    /// Replaces the stage's state with `snapshot`'s.
    mutating func restore(_ snapshot: StageSnapshot) throws(SimulationError)
}

/// What a stage step produced, as the simulator needs it.
public struct StageStep: Sendable {
    public var outputs: [OutputRecord]
    public var deadLetter: RecordError?
    /// The coordinates the step's ids derive from. A record the step sends into another stage's
    /// log carries them as its origin, as the runtime's provenance headers do.
    public var origin: SourceCoordinates
    /// The index the next id at the same coordinates must start from.
    public var nextIndex: Int

    public init(outputs: [OutputRecord], deadLetter: RecordError?, origin: SourceCoordinates, nextIndex: Int) {
        self.outputs = outputs; self.deadLetter = deadLetter; self.origin = origin; self.nextIndex = nextIndex
    }

    init<State>(_ step: FoldStep<State>) {
        self.init(outputs: step.outputs, deadLetter: step.deadLetter, origin: step.ids.origin, nextIndex: step.nextIndex)
    }
}

/// A stage's state: its log time and every user's state, users sorted by id so the same state
/// always encodes to the same bytes.
///
/// A state is kept as the exact text its own `Codable` encoding wrote, never as a parsed JSON
/// tree: a generic tree would pass numbers through `Int64`/`Double` and lose, for example, the
/// 64-bit id hashes the delivery engine remembers for P-IDEM-1.
public struct StageSnapshot: Codable, Hashable, Sendable {
    public struct User: Codable, Hashable, Sendable {
        public var userId: String
        /// The state's JSON encoding, verbatim.
        public var state: String
        enum CodingKeys: String, CodingKey { case userId = "user_id", state }
    }

    public var name: String
    public var logTime: Timestamp?
    public var users: [User]

    enum CodingKeys: String, CodingKey { case name, logTime = "log_time", users }
}

/// The stage of any `UserProcessor`: a `PartitionFold` over one topic.
public struct FoldStage<P: UserProcessor>: SimulationStage {
    public let name: String
    public let foldedTopic: String
    public let ingestTopics: [String]
    public private(set) var fold: PartitionFold<P>
    private let zoneOfState: (@Sendable (P.State) -> Zone?)?

    /// - Parameters:
    ///   - zone: reads the user's time zone from a state, for a processor that knows it (the
    ///     delivery engine); the summary then counts local days.
    public init(
        name: String, processor: P, folding topic: String, ingesting ingestTopics: [String] = [],
        zone: (@Sendable (P.State) -> Zone?)? = nil
    ) {
        self.name = name
        self.foldedTopic = topic
        self.ingestTopics = ingestTopics
        self.fold = PartitionFold(processor: processor)
        self.zoneOfState = zone
    }

    /// The stage of one of the fleet's workers, with the topics `Worker` says it folds and
    /// ingests.
    public init(worker: Worker, processor: P, zone: (@Sendable (P.State) -> Zone?)? = nil) {
        self.init(
            name: worker.rawValue, processor: processor, folding: worker.foldedTopic,
            ingesting: worker.ingestTopics, zone: zone)
    }

    public var logTime: Timestamp? { fold.logTime }
    public var nextWakeUp: Timestamp? { fold.nextWakeUp }

    public mutating func apply(
        _ record: FleetRecord, timestamp: Timestamp, coordinates: SourceCoordinates, originIndex: Int?, firstIndex: Int
    ) -> StageStep {
        StageStep(fold.apply(
            record, timestamp: timestamp, coordinates: coordinates, originIndex: originIndex, firstIndex: firstIndex))
    }

    public mutating func advance(to time: Timestamp, origin: SourceCoordinates, firstIndex: Int) -> StageStep {
        StageStep(fold.advance(to: time, origin: origin, firstIndex: firstIndex))
    }

    public func zone(ofUser userId: String) -> Zone? {
        guard let zoneOfState, let state = fold.states[userId] else { return nil }
        return zoneOfState(state)
    }

    public func snapshot() -> StageSnapshot {
        let users = fold.states.sorted { $0.key < $1.key }.map { user, state in
            StageSnapshot.User(userId: user, state: String(decoding: JSONText.encode(state), as: UTF8.self))
        }
        return StageSnapshot(name: name, logTime: fold.logTime, users: users)
    }

    public mutating func restore(_ snapshot: StageSnapshot) throws(SimulationError) {
        guard snapshot.name == name else {
            throw .snapshot("snapshot of stage '\(snapshot.name)' cannot restore stage '\(name)'")
        }
        var states: [String: P.State] = [:]
        states.reserveCapacity(snapshot.users.count)
        for user in snapshot.users {
            do {
                states[user.userId] = try JSONDecoder().decode(P.State.self, from: Data(user.state.utf8))
            } catch {
                throw .snapshot("stage '\(name)': the state of user '\(user.userId)' does not decode: \(error)")
            }
        }
        fold = PartitionFold(processor: fold.processor, restoring: states, logTime: snapshot.logTime)
    }
}
