import FleetModel
import FleetOperations
import FleetWorkers
import Kafka
import PropertyBased

/// One record of a random folded partition for the replay property tests.
struct LogEntry: Sendable, CustomStringConvertible {
    enum Kind: Sendable { case action(user: String, action: String), tick, garbage }
    var kind: Kind
    /// Seconds after the previous record's timestamp (negative: stamped earlier).
    var dt: Int64
    /// Whether the worker commits (writes a log-time position) after this record.
    var commitAfter: Bool

    var description: String {
        switch kind {
        case .action(let user, let action): "\(user) \(action) +\(dt)s\(commitAfter ? " |" : "")"
        case .tick: "tick +\(dt)s"
        case .garbage: "garbage +\(dt)s"
        }
    }

    static let generator = zip(Gen.int(in: 0...2), Gen.int(in: 0...9), Gen.int(in: -20...200), Gen.bool).map { user, kind, dt, commit in
        let name = "u\(user)"
        let entryKind: Kind = switch kind {
        case 0...3: .action(user: name, action: "count")
        case 4...5: .action(user: name, action: "alarm")
        case 6: .action(user: name, action: "reject")
        case 7: .garbage
        default: .tick
        }
        return LogEntry(kind: entryKind, dt: Int64(dt), commitAfter: commit)
    }

    static let logs = generator.array(of: 0...25)
}

/// What a worker running `CounterProcessor` wrote for a log, built with the runtime's own fold
/// (`LogFolding`): the folded partition, its outputs and dead letters, history and positions,
/// and the fold's content before each offset (what `StartState` must rebuild).
struct RecordedLog {
    static let partition: Int32 = 1
    static let topics = WorkerTopics(worker: .delivery)

    var log: [KafkaMessage] = []
    var outputs: [KafkaMessage] = []
    var deadLetters: [KafkaMessage] = []
    var history: [KafkaMessage] = []
    var changelog: [KafkaMessage] = []
    /// States and log time just before offset i.
    var before: [StartState<CounterProcessor.State>] = []

    /// How the recorded worker wrote `<worker>.history`.
    enum HistoryMode {
        /// A change record per state change, with its before-image (the builds before per-unit
        /// history).
        case perInput
        /// One image per changed user per commit unit (a unit ends at each `commitAfter`).
        case perUnit
        /// `perUnit`, and before every unit the images of an at-least-once attempt of it that
        /// was acknowledged but never committed and ran three records further (a crash, then
        /// a re-run with other unit boundaries): copies a replay must cope with.
        case perUnitWithUncommittedAttempts
    }

    init(_ entries: [LogEntry], history mode: HistoryMode = .perInput) {
        var time = Timestamp.at("2026-11-21T09:00:00Z")
        for (offset, entry) in entries.enumerated() {
            time = time + .seconds(entry.dt)
            let (key, value): ([UInt8]?, [UInt8]) = switch entry.kind {
            case .action(let user, let action):
                (Array(user.utf8), RecordCodec.encode(.userAction(UserAction(id: "a\(offset)", userId: user, action: action))))
            case .tick: (nil, RecordCodec.encode(.tick(Tick(id: "t\(offset)"))))
            case .garbage: (Array("u0".utf8), Array("not json".utf8))
            }
            log.append(KafkaMessage(
                topic: Self.topics.folded, partition: Self.partition, offset: Int64(offset), key: key, value: value,
                timestamp: time.millisecondsSinceEpoch, timestampType: .createTime))
        }
        var fold = PartitionFold(processor: CounterProcessor())
        let logical = TopicNamespace()
        func message(_ record: ProducerRecord, offset: Int) -> KafkaMessage {
            KafkaMessage(
                topic: record.topic, partition: Self.partition, offset: Int64(offset), key: record.key, value: record.value,
                headers: record.headers, timestamp: record.timestamp, timestampType: .createTime)
        }
        var unit = UnitImages()
        for (index, entry) in log.enumerated() {
            before.append(StartState(states: fold.states, logTime: fold.logTime))
            if mode == .perUnitWithUncommittedAttempts, unit.start == nil {
                // The attempt folds from the same state to three records past the unit's end.
                var attemptFold = fold
                var attempt = UnitImages()
                let end = min(log.count, (entries[index...].firstIndex { $0.commitAfter } ?? log.count - 1) + 4)
                for ahead in log[index..<end] {
                    let folded = LogFolding.fold(ahead, into: &attemptFold)
                    attempt.add(folded.step, offset: ahead.offset, logTime: attemptFold.logTime ?? folded.timestamp)
                }
                for record in attempt.records(topic: Self.topics.history, log: Self.topics.folded, partition: Self.partition) {
                    history.append(message(record, offset: history.count))
                }
            }
            let folded = LogFolding.fold(entry, into: &fold)
            if let error = folded.deadLetter {
                deadLetters.append(message(KafkaRecords.deadLetter(entry, error: error, in: logical), offset: deadLetters.count))
            }
            if mode != .perInput {
                // Every record folded belongs to the unit, even one that does not decode.
                unit.add(folded.step, offset: entry.offset, logTime: fold.logTime ?? folded.timestamp)
                if entries[index].commitAfter || index == log.count - 1 {
                    for record in unit.records(topic: Self.topics.history, log: Self.topics.folded, partition: Self.partition) {
                        history.append(message(record, offset: history.count))
                    }
                    unit = UnitImages()
                }
            }
            guard let step = folded.step else { continue }
            for (position, output) in step.outputs.enumerated() {
                outputs.append(message(LogFolding.producerRecord(
                    for: output, index: position, of: folded.origin, originIndex: folded.originIndex, in: logical), offset: outputs.count))
            }
            for change in step.changes where mode == .perInput {
                let record = ChangelogRecords.change(
                    userId: change.userId, before: try? change.before.map { try StateCoding.encode($0) },
                    after: (try? StateCoding.encode(change.after)) ?? [], input: KafkaRecords.coordinates(entry),
                    logTime: fold.logTime ?? folded.timestamp, topic: Self.topics.history, partition: Self.partition)
                history.append(message(record, offset: history.count))
            }
            if entries[index].commitAfter, let time = fold.logTime {
                changelog.append(message(
                    ChangelogRecords.position(logTime: time, inputOffset: entry.offset, topic: Self.topics.state, partition: Self.partition),
                    offset: changelog.count))
            }
        }
        before.append(StartState(states: fold.states, logTime: fold.logTime))
    }

    /// The history images of one commit unit, as `FoldCore` writes them.
    struct UnitImages {
        var start: Int64?
        var users: [String: (offsets: [Int64], after: CounterProcessor.State, logTime: Timestamp)] = [:]

        mutating func add(_ step: FoldStep<CounterProcessor.State>?, offset: Int64, logTime: Timestamp) {
            if start == nil { start = offset }
            for change in step?.changes ?? [] {
                var entry = users[change.userId] ?? ([], change.after, logTime)
                if entry.offsets.last != offset { entry.offsets.append(offset) }
                entry.after = change.after
                entry.logTime = logTime
                users[change.userId] = entry
            }
        }

        func records(topic: String, log: String, partition: Int32) -> [ProducerRecord] {
            guard let start else { return [] }
            return users.sorted { $0.key < $1.key }.map { user, entry in
                ChangelogRecords.historyImage(
                    userId: user, after: (try? StateCoding.encode(entry.after)) ?? [], unitStart: start, changed: entry.offsets,
                    logTime: entry.logTime, inputTopic: log, topic: topic, partition: partition)
            }
        }
    }

    var points: [StartState<CounterProcessor.State>.LogPoint] {
        log.map { .init(offset: $0.offset, timestamp: $0.timestamp.map(Timestamp.init(millisecondsSinceEpoch:)), decodes: (try? KafkaRecords.decode($0)) != nil) }
    }

    func historyChanges() throws -> [HistoryChange<CounterProcessor.State>] {
        try history.map { try HistoryChange<CounterProcessor.State>($0) }
    }

    func changelogEntries() throws -> [ChangelogRecords.Entry<CounterProcessor.State>] {
        try changelog.map { try ChangelogRecords.entry(of: $0, as: CounterProcessor.State.self) }
    }
}

extension Timestamp {
    static func at(_ text: String) -> Timestamp {
        guard let time = Timestamp(rfc3339: text) else { preconditionFailure("bad literal time \(text)") }
        return time
    }
}
