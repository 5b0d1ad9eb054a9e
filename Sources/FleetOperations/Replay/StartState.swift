public import FleetModel
public import FleetWorkers

/// What a partition's fold held just before offset `start` of its folded log: every user's state
/// and the partition's log time, rebuilt from what the worker recorded (DESIGN.md principle 6).
///
/// A user's state before `start` is, in this order of preference:
/// 1. the `after` image of the user's last history record as of an input offset below `start`;
/// 2. else, when the user's first record at or after `start` is a per-input change record (the
///    builds before per-unit history), its `before` image (nothing changed the user in between;
///    `null` means the user was not stored), which covers users whose older history has expired;
/// 3. else the user's last `<worker>.state` record at an input offset below `start` (a
///    migration's re-keyed state, or a copied history record of the previous generation, counts
///    as offset -1);
/// 4. else the user is not stored (initial state, no timer) — unless the history's beginning
///    was deleted by retention, when the caller cannot know (`usersWithoutImage`).
/// With per-input change records each is exact at any `start`. With per-unit history images,
/// they are exact at a unit's start: call this with `RefoldBase`'s `base` and re-fold the log
/// from there to the asked offset. Copies an at-least-once re-run wrote are identical.
///
/// The log time before `start` is the log time recorded at the last checkpoint below `start` (a
/// history change's `log_time` or a `position` record of `<worker>.state`), moved on by every
/// decodable record between that checkpoint and `start`: after each step the fold's log time is
/// the larger of the previous one and the record's timestamp (`PartitionFold`), and a record that
/// does not decode does not move it (`LogFolding`). With no checkpoint the log is taken from its
/// first record read, which is exact while the partition's start has not been deleted by
/// retention before the worker checkpointed it.
public struct StartState<State: Codable & Hashable & Sendable>: Sendable {
    public var states: [String: State]
    public var logTime: Timestamp?

    public init(states: [String: State], logTime: Timestamp?) {
        self.states = states; self.logTime = logTime
    }

    /// One record of the folded log as the log-time computation needs it.
    public struct LogPoint: Sendable, Hashable {
        public var offset: Int64
        public var timestamp: Timestamp?
        /// Whether the record decodes (a record that does not is dead-lettered before the fold).
        public var decodes: Bool

        public init(offset: Int64, timestamp: Timestamp?, decodes: Bool) {
            self.offset = offset; self.timestamp = timestamp; self.decodes = decodes
        }
    }

    /// The fold's content just before `start`.
    /// - Parameters:
    ///   - history: the partition's history changes, any order.
    ///   - changelog: the partition's `<worker>.state` entries, any order.
    ///   - log: the folded partition's records read, in offset order.
    public static func before(
        _ start: Int64, history: [HistoryChange<State>], changelog: [ChangelogRecords.Entry<State>], log: [LogPoint]
    ) -> StartState {
        var builder = Builder(start: start)
        for change in history { builder.add(change) }
        for entry in changelog { builder.add(entry) }
        for point in log { builder.add(point) }
        return builder.state
    }

    /// `before`, one record at a time, so a replay streams the history, the changelog and the
    /// log instead of holding them: it keeps per user only the images that can matter (the last
    /// change below `start`, the first at or after it, the last stored state below it) and the
    /// latest checkpoint, so memory grows with the partition's users, not its records. Feed
    /// every history change and changelog entry first; then the log's records from
    /// `checkpointOffset + 1` on (earlier ones cannot move the log time past the checkpoint's,
    /// so a replay reads the log only from the nearest checkpoint before its range).
    ///
    /// With `keepingImagesEncoded`, each kept image is held as its binary image (a few hundred
    /// bytes, where a decoded state is several kilobytes) and decoded only when asked for by
    /// `state(keeping:)`: a replay asks for the users its re-fold can touch, so its memory grows
    /// with the range and the partition's encoded images, not its decoded states.
    public struct Builder: Sendable {
        public let start: Int64
        private let keepsEncoded: Bool
        private var lastBefore: [String: KeptChange] = [:]
        private var firstFrom: [String: KeptChange] = [:]
        private var stored: [String: (offset: Int64, state: Kept)] = [:]
        private var checkpoint: (offset: Int64, time: Timestamp)?
        private var logTimeAfterCheckpoint: Timestamp?

        public init(start: Int64, keepingImagesEncoded: Bool = false) {
            self.start = start
            self.keepsEncoded = keepingImagesEncoded
        }

        private mutating func note(_ offset: Int64, _ time: Timestamp) {
            guard offset < start else { return }
            if let current = checkpoint, (current.offset, current.time) >= (offset, time) { return }
            checkpoint = (offset, time)
        }

        public mutating func add(_ change: HistoryChange<State>) {
            if change.inputOffset < start {
                if (lastBefore[change.userId]?.inputOffset ?? Int64.min) <= change.inputOffset { lastBefore[change.userId] = keep(change) }
                note(change.inputOffset, change.logTime)
            } else if (firstFrom[change.userId]?.inputOffset ?? Int64.max) > change.inputOffset {
                firstFrom[change.userId] = keep(change)
            }
        }

        public mutating func add(_ entry: ChangelogRecords.Entry<State>) {
            switch entry {
            case .state(let user, let inputOffset, let state) where inputOffset < start:
                if (stored[user]?.offset ?? Int64.min) <= inputOffset { stored[user] = (inputOffset, keep(state)) }
            case .position(let inputOffset, let time):
                note(inputOffset, time)
            default:
                break
            }
        }

        /// The offset of the latest checkpoint below `start` (a history change's or a position
        /// record's input offset); nil when there is none and the log must be read from its
        /// first record.
        public var checkpointOffset: Int64? { checkpoint?.offset }

        /// A record of the log; only those after the checkpoint and before `start` count.
        public mutating func add(_ point: LogPoint) {
            let after = checkpoint?.offset ?? Int64.min
            guard point.offset > after, point.offset < start, point.decodes else { return }
            let base = logTimeAfterCheckpoint ?? checkpoint?.time
            let time = point.timestamp ?? base ?? Timestamp(millisecondsSinceEpoch: 0)
            logTimeAfterCheckpoint = max(base ?? time, time)
        }

        /// Users changed at or after `start` whose state before it no history record or state
        /// record says: not stored then when the partition's history is whole; unknown when
        /// its beginning was deleted by retention (history retention bounds how far back a
        /// replay can start).
        public var usersWithoutImage: [String] {
            firstFrom.filter { user, change in !change.hasBefore && lastBefore[user] == nil && stored[user] == nil }.keys.sorted()
        }

        /// The log time before `start`, from what was added.
        public var logTime: Timestamp? { logTimeAfterCheckpoint ?? checkpoint?.time }

        /// The fold's content before `start` from what was added: every user's state.
        public var state: StartState {
            do {
                return try state(keeping: { _, _ in true })
            } catch {
                // Only images this builder encoded itself are decoded, with the same code.
                preconditionFailure("a state image the replay encoded does not decode: \(error)")
            }
        }

        /// The fold's content before `start`, with only the users `keep` is true for (given
        /// each user's state): each image is decoded once, and those not kept are dropped.
        public func state(keeping keep: (String, State) -> Bool) throws(StateImageError) -> StartState {
            var states: [String: State] = [:]
            for user in Set(lastBefore.keys).union(firstFrom.keys).union(stored.keys) {
                let kept: Kept?
                if let change = lastBefore[user] {
                    kept = change.after
                } else if let change = firstFrom[user], change.hasBefore {
                    kept = change.before
                } else {
                    kept = stored[user]?.state
                }
                guard let state = try kept?.state(), keep(user, state) else { continue }
                states[user] = state
            }
            return StartState(states: states, logTime: logTime)
        }

        private func keep(_ state: State) -> Kept {
            guard keepsEncoded, let image = try? StateCoding.encode(state) else { return .decoded(state) }
            return .encoded(image)
        }

        private func keep(_ change: HistoryChange<State>) -> KeptChange {
            KeptChange(
                inputOffset: change.inputOffset, hasBefore: change.hasBefore, after: keep(change.after),
                before: change.hasBefore ? change.before.map { keep($0) } : nil)
        }
    }

    /// A state as `Builder` keeps it: decoded, or as its image (decoded when asked for).
    /// Indirect, so an entry of a builder's dictionaries takes a pointer, not the inline size of
    /// a state (a `DeliveryState` is hundreds of bytes even when empty).
    indirect enum Kept: Sendable {
        case decoded(State)
        case encoded([UInt8])

        func state() throws(StateImageError) -> State {
            switch self {
            case .decoded(let state): state
            case .encoded(let image): try StateCoding.decode(image, as: State.self)
            }
        }
    }

    /// What `Builder` keeps of a history change.
    struct KeptChange: Sendable {
        var inputOffset: Int64
        var hasBefore: Bool
        var after: Kept
        /// The state before the input (nil: not stored), when `hasBefore`.
        var before: Kept?
    }
}
