public import FleetModel
public import FleetWorkers
public import Kafka

/// What re-running a range produced, in the shape replay compares.
public struct ReplayedRange: Sendable {
    /// Output records and dead letters, in the order the worker would write them.
    public var outputs: [ComparedRecord] = []
    /// The `<worker>.history` changes it would write.
    public var history: [ComparedRecord] = []
    /// The same changes as a worker with `FLEET_STATE_IMAGES=json` (or a build before binary
    /// images) writes them, by key: a recorded change in that form is compared with these, so a
    /// range recorded before an upgrade still replays as identical.
    public var jsonHistory: [String: ComparedRecord] = [:]
    /// The output records themselves, in order, for the what-if summary.
    public var records: [FleetRecord] = []
    /// The id stem (`OutputIDs` without the final index) of every step re-run: a recorded
    /// output belongs to the range exactly when its id has one of these stems.
    public var stems: Set<String> = []
    /// Every state change of the re-fold, the warm-up included, in fold order: what per-unit
    /// history images are rebuilt from (`history(for:covered:)`).
    public var changes: [Change] = []

    public init() {}

    /// One user's state change at one input of the re-fold.
    public struct Change: Sendable {
        public var userId: String
        public var inputOffset: Int64
        public var partition: Int32
        /// The log the input is of (logical name).
        public var inputTopic: String
        /// The state's images before (nil: not stored) and after, binary where the state has one.
        public var before: [UInt8]?
        public var after: [UInt8]
        /// The same as JSON, for a recorded change written with JSON images.
        public var jsonBefore: [UInt8]?
        public var jsonAfter: [UInt8]?
        public var logTime: Timestamp
    }
}

/// Re-runs a range of one folded partition with a processor, from a start state, through the
/// runtime's own fold (`LogFolding`): what a worker with that processor writes for those records.
public enum PartitionReplay {
    /// - Parameters:
    ///   - start: the fold's content before the first record of `warmUp` (else of `log`).
    ///   - warmUp: records folded before the range, from the re-fold's base (`RefoldBase`), with
    ///     logical topic names, in offset order: only their state changes are kept.
    ///   - log: the range's records with logical topic names, in offset order.
    public static func run<P: UserProcessor>(
        _ processor: P, from start: StartState<P.State>, warmUp: [KafkaMessage] = [], log: [KafkaMessage], topics: WorkerTopics,
        limits: RecordLimits = .standard
    ) throws(ReplayError) -> ReplayedRange {
        var fold = PartitionFold(processor: processor, restoring: start.states, logTime: start.logTime)
        var replayed = ReplayedRange()
        for message in warmUp {
            let folded = LogFolding.fold(message, into: &fold, limits: limits)
            guard let step = folded.step else { continue }
            try record(step.changes, of: message, logTime: fold.logTime ?? folded.timestamp, into: &replayed)
        }
        let logical = TopicNamespace()
        for message in log {
            let folded = LogFolding.fold(message, into: &fold, limits: limits)
            replayed.stems.insert(stem(of: folded.origin, originIndex: folded.originIndex))
            if let error = folded.deadLetter {
                let letter = KafkaRecords.deadLetter(message, error: error, in: logical, limits: limits)
                replayed.outputs.append(ComparedRecord(letter, key: deadLetterKey(partition: message.partition, offset: message.offset)))
            }
            guard let step = folded.step else { continue }
            for (index, (output, value)) in zip(step.outputs, folded.outputValues).enumerated() {
                let record = LogFolding.producerRecord(
                    for: output, value: value, index: index, of: folded.origin, originIndex: folded.originIndex, in: logical)
                replayed.outputs.append(ComparedRecord(record, key: output.record.id))
                replayed.records.append(output.record)
            }
            let input = KafkaRecords.coordinates(message)
            let logTime = fold.logTime ?? folded.timestamp
            let first = replayed.changes.count
            try record(step.changes, of: message, logTime: logTime, into: &replayed)
            for change in replayed.changes[first...] {
                let record = ChangelogRecords.change(
                    userId: change.userId, before: change.before, after: change.after, input: input, logTime: logTime,
                    topic: topics.history, partition: message.partition)
                let key = historyKey(user: change.userId, inputOffset: message.offset)
                replayed.history.append(ComparedRecord(record, key: key))
                if let jsonAfter = change.jsonAfter {
                    replayed.jsonHistory[key] = ComparedRecord(ChangelogRecords.change(
                        userId: change.userId, before: change.jsonBefore, after: jsonAfter, input: input, logTime: logTime,
                        topic: topics.history, partition: message.partition), key: key)
                }
            }
        }
        return replayed
    }

    private static func record<State: Codable>(
        _ changes: [StateChange<State>], of message: KafkaMessage, logTime: Timestamp, into replayed: inout ReplayedRange
    ) throws(ReplayError) {
        for change in changes {
            let before: [UInt8]?
            let after: [UInt8]
            do {
                before = try change.before.map { try StateCoding.encode($0) }
                after = try StateCoding.encode(change.after)
            } catch {
                throw ReplayError("cannot encode the state of user \(change.userId): \(error)")
            }
            let jsonAfter = try? StateCoding.encode(change.after, as: .json)
            replayed.changes.append(ReplayedRange.Change(
                userId: change.userId, inputOffset: message.offset, partition: message.partition, inputTopic: message.topic,
                before: before, after: after, jsonBefore: jsonAfter == nil ? nil : change.before.flatMap { try? StateCoding.encode($0, as: .json) },
                jsonAfter: jsonAfter, logTime: logTime))
        }
    }

    /// The id stem of a step at `origin`: its output ids are `<stem>:<index>` (`OutputIDs`).
    public static func stem(of origin: SourceCoordinates, originIndex: Int?) -> String {
        OutputIDs(origin: origin, originIndex: originIndex).stem
    }

    /// The stem of the step that wrote a recorded output: its `source-step` header where the
    /// runtime wrote one (an output with an id of its own, `OutputRecord.hasOwnId`), else its
    /// id's stem. A recorded output belongs to a replayed range exactly when this is the stem
    /// of one of the range's steps.
    public static func stem(ofOutput message: KafkaMessage, id: String) -> Substring? {
        if let step = message.header(KafkaRecords.Header.sourceStep) { return Substring(decoding: step, as: UTF8.self) }
        return stem(ofId: id)
    }

    /// The stem of an output id: everything before its last `:`.
    public static func stem(ofId id: String) -> Substring? {
        guard let colon = id.lastIndex(of: ":") else { return nil }
        return id[..<colon]
    }

    static func deadLetterKey(partition: Int32, offset: Int64) -> String { "source \(partition):\(offset)" }
    static func historyKey(user: String, inputOffset: Int64) -> String { "\(user)@\(inputOffset)" }

    /// Where a recorded history record is compared: `user@offset` for a per-input change,
    /// `user@unit_start..last_offset` for a per-unit image (at-least-once attempts of one
    /// unit with other boundaries are other slots, each checked on its own).
    public static func historyKey(of place: ChangelogRecords.HistoryPlace) -> String {
        switch place.form {
        case .unitImage: "\(place.userId)@\(place.unitStart)..\(place.lastOffset)"
        case .binaryChange, .jsonChange: historyKey(user: place.userId, inputOffset: place.lastOffset)
        }
    }
}

/// A user and an input offset: one state change.
public struct UserOffset: Hashable, Sendable {
    public var userId: String
    public var offset: Int64

    public init(userId: String, offset: Int64) { self.userId = userId; self.offset = offset }
}

extension ReplayedRange {
    /// The history records the re-fold writes in the recorded records' own slots and forms, so
    /// each is compared byte for byte with what the worker wrote:
    /// - a per-unit image is rebuilt from the re-fold's changes of its user between its unit's
    ///   start and its last offset (which offsets changed the user, the state after the last,
    ///   the log time then): a different state, another set of changed inputs, or a last offset
    ///   at which the re-fold does not change the user all come out as a changed record;
    /// - a per-input change record (binary or JSON) is the change at its input, as before.
    /// Then every change of the range at `range` that no recorded record covers (`covered`:
    /// the changed inputs of every recorded record, in any slot) is an extra record of its own.
    /// The re-fold must have started at or before every image's unit start (`RefoldBase`).
    public func history(
        for recorded: [ChangelogRecords.HistoryPlace], covered: Set<UserOffset>, range: ReplayRange, topics: WorkerTopics
    ) -> [ComparedRecord] {
        var byUser: [String: [Change]] = [:]
        var byChange: [UserOffset: Change] = [:]
        for change in changes {
            byUser[change.userId, default: []].append(change)
            // A user changed twice in one step (a timer, then its record) keeps the last.
            byChange[UserOffset(userId: change.userId, offset: change.inputOffset)] = change
        }
        var records: [ComparedRecord] = []
        var slots = Set<String>()
        for place in recorded {
            let key = PartitionReplay.historyKey(of: place)
            guard slots.insert(key).inserted else { continue }
            switch place.form {
            case .unitImage:
                let inUnit = (byUser[place.userId] ?? []).filter { $0.inputOffset >= place.unitStart && $0.inputOffset <= place.lastOffset }
                guard let last = inUnit.last else { continue }
                var offsets: [Int64] = []
                for change in inUnit where offsets.last != change.inputOffset { offsets.append(change.inputOffset) }
                records.append(ComparedRecord(ChangelogRecords.historyImage(
                    userId: place.userId, after: last.after, unitStart: place.unitStart, changed: offsets, logTime: last.logTime,
                    inputTopic: last.inputTopic, topic: topics.history, partition: last.partition), key: key))
            case .binaryChange, .jsonChange:
                guard let change = byChange[UserOffset(userId: place.userId, offset: place.lastOffset)] else { continue }
                let input = SourceCoordinates(topic: change.inputTopic, partition: change.partition, offset: change.inputOffset)
                let json = place.form == .jsonChange && change.jsonAfter != nil
                records.append(ComparedRecord(ChangelogRecords.change(
                    userId: change.userId, before: json ? change.jsonBefore : change.before, after: json ? change.jsonAfter ?? [] : change.after,
                    input: input, logTime: change.logTime, topic: topics.history, partition: change.partition), key: key))
            }
        }
        for (user, offset) in byChange.keys.map({ ($0.userId, $0.offset) }).sorted(by: { ($0.1, $0.0) < ($1.1, $1.0) })
        where range.contains(offset) && !covered.contains(UserOffset(userId: user, offset: offset)) {
            guard let change = byChange[UserOffset(userId: user, offset: offset)] else { continue }
            let place = ChangelogRecords.HistoryPlace(
                userId: user, form: .unitImage, inputTopic: change.inputTopic, inputPartition: change.partition, unitStart: offset,
                changed: [offset])
            records.append(ComparedRecord(ChangelogRecords.historyImage(
                userId: user, after: change.after, unitStart: offset, changed: [offset], logTime: change.logTime,
                inputTopic: change.inputTopic, topic: topics.history, partition: change.partition), key: PartitionReplay.historyKey(of: place)))
        }
        return records
    }
}
