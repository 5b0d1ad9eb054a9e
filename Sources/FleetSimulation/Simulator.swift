public import FleetModel

/// The whole fleet's logic in one process (`fleetctl simulate`, DESIGN.md "Operating it").
///
/// Each stage folds the emulated partition 0 of its topic through the same `PartitionFold` the
/// Kafka runtime uses. The simulator plays the parts Kafka and the runtime play in production:
///
/// - **Logs and offsets.** Every topic a record is written to has an emulated log (partition
///   0); a record's offset is its position there. Output ids follow the runtime's origin rule
///   (see `OutputIDs`): a record is identified where it was first written, so a line on a folded
///   topic (`rin.score.batches`, a tick or an intent written straight into an inbox) yields
///   `topic:0:offset:index` of its own position.
/// - **Ingest.** A line on a stage's ingest topic (`rin.app.activity`, `rin.reminders`) is
///   validated there and forwarded, unchanged, to the end of the stage's inbox; a bad one goes to
///   `<ingest topic>.dlq`. The forward occupies an inbox offset, as in production, but its ids
///   derive from the line's coordinates on the ingest topic (`rin.app.activity:0:offset:index`),
///   as the runtime derives them from the forward's source headers.
/// - **Records between stages.** A record a stage emits to a topic another stage folds
///   (upstream intents to `rin.delivery.inbox`) is printed, appended to that log, read back
///   through `RecordCodec` exactly as a consumer would, and folded at the time it was produced.
///   Its ids derive from the step that produced it: that step's coordinates and the record's
///   position among its outputs (`topic:0:offset:originIndex:index`). Records are delivered
///   first in, first out, so a batch of outputs lands in the log in the order it was produced
///   before the next stage reacts to it.
/// - **Time.** Before each line every stage is advanced to the line's `at`. Timers fire in global
///   time order across stages; at equal times the stage registered first fires first, which is
///   why upstream stages come before the delivery stage: a reminder due at 09:00 reaches the
///   delivery engine at 09:00, before the engine's own later timers. Timer ids derive from the
///   next offset of the stage's log. Successive advances at that offset, and a record then read
///   at that very offset, continue its id indices and output positions, exactly as
///   `PartitionFold.apply` would number them had it fired the timers itself; a forwarded or
///   inter-stage record landing there has ids of its own origin and starts afresh.
///
/// The same input always yields the same outputs, byte for byte; a run split anywhere with
/// `snapshot()` / `restore(_:)` yields the same outputs as one run.
public struct Simulator: Sendable {
    public private(set) var stages: [any SimulationStage]
    /// Per stage: what its advances numbered at the next offset of its log (see `PendingNumbers`).
    private var pending: [PendingNumbers?]
    /// Next offset of every emulated log written so far.
    private var logEnds: [String: Int64] = [:]
    private let routes: [String: Route]
    /// The time every stage has been advanced to.
    public private(set) var time: Timestamp?
    /// Lines read by `feed(line:)`, blank ones included: the next line's number minus one.
    public private(set) var linesRead = 0
    /// The last non-blank line consumed, for the order check.
    public private(set) var lastLine: (number: Int, at: Timestamp)?

    private enum Route: Sendable {
        /// The stage folds this topic.
        case fold(stage: Int)
        /// The stage's ingest forwards this topic into the stage's folded topic.
        case ingest(stage: Int)

        var stage: Int {
            switch self { case .fold(let stage), .ingest(let stage): stage }
        }
    }

    /// A fleet of `stages`. At equal times, earlier stages fire their timers first.
    public init(stages: [any SimulationStage]) throws(SimulationError) {
        var routes: [String: Route] = [:]
        var names = Set<String>()
        for (index, stage) in stages.enumerated() {
            guard names.insert(stage.name).inserted else {
                throw .configuration("two stages are named '\(stage.name)'")
            }
            for (topic, route) in [(stage.foldedTopic, Route.fold(stage: index))] + stage.ingestTopics.map({ ($0, .ingest(stage: index)) }) {
                if let other = routes[topic] {
                    throw .configuration(
                        "topic '\(topic)' is consumed by both '\(stages[other.stage].name)' and '\(stage.name)'")
                }
                routes[topic] = route
            }
        }
        self.stages = stages
        self.routes = routes
        self.pending = Array(repeating: nil, count: stages.count)
    }

    /// Every topic some stage reads, sorted: what an input line may name.
    public var consumedTopics: [String] { routes.keys.sorted() }

    /// The user's time zone, from the first stage that knows it.
    public func zone(ofUser userId: String) -> Zone? {
        for stage in stages { if let zone = stage.zone(ofUser: userId) { return zone } }
        return nil
    }

    // MARK: - Input

    /// Reads the next JSONL line (numbered from 1, blank lines counted) and returns the outputs
    /// it caused, in the order produced.
    public mutating func feed(line text: some StringProtocol) throws(SimulationError) -> [SimulationOutput] {
        let number = linesRead + 1
        guard let input = try SimulationInput.parse(text, line: number) else {
            linesRead = number
            return []
        }
        let outputs = try feed(input)
        linesRead = number
        return outputs
    }

    /// Advances every stage to `input.at`, then consumes the input.
    public mutating func feed(_ input: SimulationInput) throws(SimulationError) -> [SimulationOutput] {
        if let last = lastLine, input.at < last.at {
            throw .outOfOrder(line: input.line, at: input.at, previousLine: last.number, previousAt: last.at)
        }
        guard let route = routes[input.topic] else {
            throw .unknownTopic(line: input.line, topic: input.topic, consumed: consumedTopics)
        }
        var outputs = advance(to: input.at)
        lastLine = (input.line, input.at)

        let lineCoordinates = append(to: input.topic)
        let original = JSONValue.object(input.value)
        let record: FleetRecord
        do {
            record = try RecordCodec.decode(input.valueBytes, topic: input.topic)
        } catch {
            let key = input.key ?? input.value["user_id"]?.stringValue ?? ""
            outputs.append(deadLetter(
                error.message, key: key, at: input.at, record: original, line: input.line, source: lineCoordinates))
            return outputs
        }
        if let key = input.key, !record.isTick, key != record.userId {
            outputs.append(deadLetter(
                "key '\(key)' differs from the record's user_id '\(record.userId)'", key: key, at: input.at,
                record: original, line: input.line, source: lineCoordinates))
            return outputs
        }
        // A forward occupies the next inbox offset but is identified by the line it copies.
        let position = switch route {
        case .fold: lineCoordinates
        case .ingest(let stage): append(to: stages[stage].foldedTopic)
        }
        let inbound = Inbound(
            stage: route.stage, record: record, timestamp: input.at, position: position, origin: lineCoordinates,
            originIndex: nil, source: .line(input.line, original))
        deliver([inbound], into: &outputs)
        return outputs
    }

    /// Lets time pass to `target`: fires every timer due on the way, in global time order
    /// (ties: earlier stage first), with everything those timers send on. `fleetctl simulate
    /// --until` calls it after the last line.
    public mutating func advance(to target: Timestamp) -> [SimulationOutput] {
        var outputs: [SimulationOutput] = []
        while let stage = stageWithEarliestTimer(dueBy: target), let due = stages[stage].nextWakeUp {
            advance(stage, to: due, into: &outputs)
        }
        // Bring every stage's log time to `target`. This fires nothing a well-behaved processor
        // left due; a processor whose wake-up stays in the past fires once more here (see
        // `PartitionFold`), which bounds it to once per input line.
        for stage in stages.indices where stages[stage].logTime.map({ $0 < target }) ?? true {
            advance(stage, to: target, into: &outputs)
        }
        time = max(time ?? target, target)
        return outputs
    }

    /// Advances one stage to `time` at the next offset of its log, continuing the numbers
    /// earlier advances took there, and sends on what its timers emitted.
    private mutating func advance(_ stage: Int, to time: Timestamp, into outputs: inout [SimulationOutput]) {
        let origin = nextCoordinates(of: stage)
        let taken = numbersTaken(at: origin, by: stage)
        let step = stages[stage].advance(to: time, origin: origin, firstIndex: taken.ids)
        let numbered = PendingNumbers(offset: origin.offset, ids: step.nextIndex, outputs: taken.outputs + step.outputs.count)
        pending[stage] = numbered.ids == 0 && numbered.outputs == 0 ? nil : numbered
        var queue: [Inbound] = []
        collect(step, of: stage, firstOutput: taken.outputs, into: &outputs, queue: &queue)
        deliver(queue, into: &outputs)
    }

    /// The id indices and output positions `stage`'s advances already took at `coordinates`:
    /// none unless they are the offset of its log those advances derived their ids from.
    private func numbersTaken(at coordinates: SourceCoordinates, by stage: Int) -> (ids: Int, outputs: Int) {
        guard let numbered = pending[stage], coordinates.topic == stages[stage].foldedTopic,
              coordinates.partition == 0, coordinates.offset == numbered.offset
        else { return (0, 0) }
        return (numbered.ids, numbered.outputs)
    }

    /// The stage whose next timer is the earliest due at or before `target`; ties go to the
    /// earlier stage. A wake-up not after the stage's log time is one a processor left due
    /// after firing it; it is not chosen here, or it would be fired forever.
    private func stageWithEarliestTimer(dueBy target: Timestamp) -> Int? {
        var best: (stage: Int, due: Timestamp)?
        for (index, stage) in stages.enumerated() {
            guard let due = stage.nextWakeUp, due <= target else { continue }
            if let logTime = stage.logTime, due <= logTime { continue }
            if let current = best, current.due <= due { continue }
            best = (index, due)
        }
        return best?.stage
    }

    // MARK: - Routing

    /// Where a record came from, for its dead letter.
    private enum Source: Sendable {
        /// An input line, with the value as written.
        case line(Int, JSONValue)
        /// Produced by a stage.
        case fleet
    }

    /// A record on its way into a stage's fold.
    private struct Inbound: Sendable {
        var stage: Int
        var record: FleetRecord
        var timestamp: Timestamp
        /// Where it sits in the folded log; its dead letter names this.
        var position: SourceCoordinates
        /// What its ids derive from (`PartitionFold.apply`'s `coordinates` and `originIndex`):
        /// `position` for a record read where it was written, else its origin.
        var origin: SourceCoordinates
        var originIndex: Int?
        var source: Source

        /// Whether it is read where it was written, so it continues the numbers that advances
        /// took at its offset (in production they would be one step).
        var isReadWhereWritten: Bool { originIndex == nil && origin == position }
    }

    /// Folds `queue` first in, first out, appending whatever each step sends on.
    private mutating func deliver(_ queue: [Inbound], into outputs: inout [SimulationOutput]) {
        var queue = queue
        var head = 0
        while head < queue.count {
            let next = queue[head]
            head += 1
            let taken = next.isReadWhereWritten ? numbersTaken(at: next.position, by: next.stage) : (ids: 0, outputs: 0)
            let step = stages[next.stage].apply(
                next.record, timestamp: next.timestamp, coordinates: next.origin, originIndex: next.originIndex,
                firstIndex: taken.ids)
            pending[next.stage] = nil  // the record took the offset the advances numbered; the next starts afresh
            collect(step, of: next.stage, firstOutput: taken.outputs, rejected: next, into: &outputs, queue: &queue)
        }
    }

    /// Prints `step`'s outputs and queues those another stage folds. `firstOutput` is the
    /// position of the step's first output among all outputs at its coordinates (advances
    /// before it at the same offset produced the others).
    private mutating func collect(
        _ step: StageStep, of stage: Int, firstOutput: Int, rejected record: Inbound? = nil,
        into outputs: inout [SimulationOutput], queue: inout [Inbound]
    ) {
        for (position, output) in step.outputs.enumerated() {
            outputs.append(SimulationOutput(at: output.timestamp, topic: output.topic, key: output.key, value: .record(output.record)))
            guard let route = routes[output.topic] else { continue }
            let written = append(to: output.topic)
            let bytes = RecordCodec.encode(output.record)
            do {
                // Read back as the consuming worker would, so the simulation sees exactly what
                // survives the wire and the consumer's validation.
                let record = try RecordCodec.decode(bytes, topic: output.topic)
                switch route {
                case .fold:
                    // Produced into the log: identified by the producing step and its place there.
                    queue.append(Inbound(
                        stage: route.stage, record: record, timestamp: output.timestamp, position: written,
                        origin: step.origin, originIndex: firstOutput + position, source: .fleet))
                case .ingest(let target):
                    // Written to an ingest topic, then forwarded: identified where it was written.
                    queue.append(Inbound(
                        stage: route.stage, record: record, timestamp: output.timestamp,
                        position: append(to: stages[target].foldedTopic), origin: written, originIndex: nil, source: .fleet))
                }
            } catch {
                outputs.append(deadLetter(
                    error.message, key: output.key, at: output.timestamp, record: Self.json(bytes), line: nil, source: written))
            }
        }
        if let error = step.deadLetter, let record {
            let (line, original): (Int?, JSONValue) = switch record.source {
            case .line(let number, let value): (number, value)
            case .fleet: (nil, Self.json(RecordCodec.encode(record.record)))
            }
            let at = stages[stage].logTime ?? record.timestamp
            outputs.append(deadLetter(
                error.message, key: record.record.userId, at: at, record: original, line: line, source: record.position))
        }
    }

    private mutating func append(to topic: String) -> SourceCoordinates {
        let offset = logEnds[topic, default: 0]
        logEnds[topic] = offset + 1
        return SourceCoordinates(topic: topic, partition: 0, offset: offset)
    }

    private func nextCoordinates(of stage: Int) -> SourceCoordinates {
        let topic = stages[stage].foldedTopic
        return SourceCoordinates(topic: topic, partition: 0, offset: logEnds[topic, default: 0])
    }

    private func deadLetter(
        _ error: String, key: String, at: Timestamp, record: JSONValue, line: Int?, source: SourceCoordinates
    ) -> SimulationOutput {
        SimulationOutput(
            at: at, topic: Topics.deadLetter(of: source.topic), key: key,
            value: .deadLetter(DeadLetter(error: error, record: record, sourceLine: line, source: source)))
    }

    private static func json(_ bytes: [UInt8]) -> JSONValue {
        (try? JSONText.decode(bytes)) ?? .string(String(decoding: bytes, as: UTF8.self))
    }

    // MARK: - Snapshot

    /// Everything needed to resume this run later: stage states, log time, offsets, the last line.
    public func snapshot() -> SimulatorSnapshot {
        SimulatorSnapshot(
            time: time, linesRead: linesRead, lastLine: lastLine?.number, lastAt: lastLine?.at, logEnds: logEnds,
            pending: Dictionary(uniqueKeysWithValues: zip(stages.map(\.name), pending).compactMap { name, numbered in
                numbered.map { (name, $0) }
            }),
            stages: stages.map { $0.snapshot() })
    }

    /// Resumes from `snapshot`, taken from a simulator with the same stages in the same order.
    public mutating func restore(_ snapshot: SimulatorSnapshot) throws(SimulationError) {
        let names = stages.map(\.name)
        guard snapshot.stages.map(\.name) == names else {
            throw .snapshot(
                "the snapshot's stages (\(snapshot.stages.map(\.name).joined(separator: ", "))) differ from this "
                    + "simulator's (\(names.joined(separator: ", ")))")
        }
        for index in stages.indices { try stages[index].restore(snapshot.stages[index]) }
        pending = names.map { snapshot.pending[$0] }
        logEnds = snapshot.logEnds
        time = snapshot.time
        linesRead = snapshot.linesRead
        if let number = snapshot.lastLine, let at = snapshot.lastAt { lastLine = (number, at) } else { lastLine = nil }
    }
}

/// The state of a whole simulation between two lines (see `Simulator.snapshot()`).
public struct SimulatorSnapshot: Codable, Hashable, Sendable {
    public var time: Timestamp?
    public var linesRead: Int
    public var lastLine: Int?
    public var lastAt: Timestamp?
    /// Next offset of each emulated log.
    public var logEnds: [String: Int64]
    /// Per stage name: what its advances numbered at the next offset of its log, if anything.
    public var pending: [String: PendingNumbers]
    public var stages: [StageSnapshot]

    enum CodingKeys: String, CodingKey {
        case time, linesRead = "lines_read", lastLine = "last_line", lastAt = "last_at", logEnds = "log_ends"
        case pending, stages
    }
}

/// What a stage's advances (timers fired between lines) numbered at the next offset of its log
/// since a record last took an offset there. A record then read at that very offset continues
/// from them, as it would had it fired those timers itself in one `PartitionFold.apply`: the ids
/// of one offset stay unique, and the records sent on keep distinct output positions.
public struct PendingNumbers: Codable, Hashable, Sendable {
    /// The offset of the stage's folded log the advances derived their ids from.
    public var offset: Int64
    /// Id indices taken there.
    public var ids: Int
    /// Outputs produced there: where the next output's position (`originIndex`) continues.
    public var outputs: Int

    public init(offset: Int64, ids: Int, outputs: Int) {
        self.offset = offset; self.ids = ids; self.outputs = outputs
    }
}

extension FleetRecord {
    var isTick: Bool { if case .tick = self { true } else { false } }
}
