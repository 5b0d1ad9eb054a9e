public import FleetModel
import FleetSimulation
import FleetWorkers
public import Kafka

/// Turns records of a worker's folded log into `fleetctl simulate` input lines
/// (`{"at","topic","key","value"}`, see `SimulationInput`), so a slice of production traffic can
/// be studied offline with `fleetctl simulate` or `fleetctl replay --input`.
///
/// - **Topic.** A record the worker's ingest stage forwarded (provenance headers naming the
///   ingest topic, e.g. `rin.app.activity`) is written on that external topic, where the
///   simulator's ingest forwards it again. Every other record (an upstream worker's intent, a
///   tick, a record written straight into the log) is written on the folded topic itself (its
///   generation-1 name when a later generation is exported: the simulator has no generations).
/// - **Time.** `at` is the record's timestamp, raised to the largest one before it when it is
///   earlier: the simulator requires non-decreasing lines, and the fold processes an earlier-
///   stamped record at its log time anyway (`PartitionFold`).
/// - **Value.** The record's bytes, verbatim. A record whose value is not a one-line JSON object
///   cannot be a simulate line; it is skipped and reported (the worker dead-lettered it).
/// - **One user.** Only the user's records, then, if the range goes on past the user's last
///   record, one `tick` at the range's last time on an inbox: a user's timers fire at their due
///   time whichever record brings the log time past it, so that tick fires exactly the timers
///   the range's later records fired in production. Ids differ from production's anyway: the
///   simulator numbers its own emulated partition 0.
/// - **State.** A simulation starts with every user new: start the range where the users of
///   interest begin (or where their state does not matter); `fleetctl replay` is the tool that
///   starts from the recorded state.
public enum SimulationExport {
    public struct Result: Sendable {
        public var lines: [String]
        /// Why each record left out was left out: `partition:offset: reason` (the first
        /// `Writer.keptReasons`; `skippedCount` counts them all).
        public var skipped: [String]
        public var skippedCount: Int
    }

    /// The export as a stream: hand it the range's records in offset order, one at a time, and
    /// write each line it returns; memory stays that of one record, whatever the range's size.
    public struct Writer: Sendable {
        /// How many reasons for left-out records are kept (all are counted).
        public static let keptReasons = 1_000

        let topics: WorkerTopics
        let user: String?
        private var clock: Timestamp?
        private var lastWritten: Timestamp?
        private var last: (partition: Int32, offset: Int64)?
        public private(set) var lineCount = 0
        public private(set) var skipped: [String] = []
        public private(set) var skippedCount = 0

        public init(topics: WorkerTopics, user: String?) {
            self.topics = topics
            self.user = user
        }

        /// The simulate line for `message`, or nil when it is not written (another user's, or
        /// left out: see `skipped`).
        public mutating func line(for message: KafkaMessage) -> String? {
            let stamped = message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:))
            let at = [clock, stamped].compactMap { $0 }.max() ?? Timestamp(millisecondsSinceEpoch: 0)
            clock = at
            last = (message.partition, message.offset)
            let key = message.key.map { String(decoding: $0, as: UTF8.self) }
            if let user, key != user { return nil }
            let topic = sourceTopic(of: message, topics: topics)
            guard let value = message.value else {
                skip(message, "no value")
                return nil
            }
            let line = envelope(at: at, topic: topic, key: key, value: String(decoding: value, as: UTF8.self))
            do {
                guard try SimulationInput.parse(line, line: lineCount + 1) != nil, !line.contains("\n") else {
                    skip(message, "empty value")
                    return nil
                }
            } catch {
                skip(message, "not a simulate line (\(error.description))")
                return nil
            }
            lineCount += 1
            lastWritten = at
            return line
        }

        /// With a user, when the range goes on past the user's last record: one `tick` at the
        /// range's last time on the inbox, so the user's timers fire as they did in production.
        public mutating func closingLine() -> String? {
            guard user != nil, topics.worker.ownsItsLog, let clock, let last, lastWritten.map({ $0 < clock }) ?? true else {
                return nil
            }
            let tick = Tick(id: "export:\(topics.folded):\(last.partition):\(last.offset)")
            lineCount += 1
            lastWritten = clock
            return envelope(at: clock, topic: topics.worker.foldedTopic, key: nil, value: RecordCodec.encodeString(.tick(tick)))
        }

        private mutating func skip(_ message: KafkaMessage, _ reason: String) {
            skippedCount += 1
            if skipped.count < Self.keptReasons { skipped.append("\(message.partition):\(message.offset): \(reason)") }
        }
    }

    /// The whole export in memory (tests, small ranges); `Writer` is the streaming form.
    public static func lines(_ log: [KafkaMessage], topics: WorkerTopics, user: String?) -> Result {
        var writer = Writer(topics: topics, user: user)
        var lines = log.compactMap { writer.line(for: $0) }
        if let closing = writer.closingLine() { lines.append(closing) }
        return Result(lines: lines, skipped: writer.skipped, skippedCount: writer.skippedCount)
    }

    /// The external topic of a record the ingest stage forwarded, else the folded topic under
    /// its generation-1 name: a simulation has one generation, whatever the one exported.
    static func sourceTopic(of message: KafkaMessage, topics: WorkerTopics) -> String {
        let origin = KafkaRecords.origin(of: message)
        if origin.index == nil, topics.worker.ingestTopics.contains(origin.coordinates.topic) { return origin.coordinates.topic }
        return topics.worker.foldedTopic
    }

    private static func envelope(at: Timestamp, topic: String, key: String?, value: String) -> String {
        var line = #"{"at":"\#(at.rfc3339)","topic":\#(quoted(topic))"#
        if let key { line += #","key":\#(quoted(key))"# }
        return line + #","value":\#(value)}"#
    }

    private static func quoted(_ text: String) -> String {
        var bytes: [UInt8] = []
        do { try CanonicalJSONEncoder.encode(text, appendingTo: &bytes) } catch { return "\"\"" }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// `fleetctl export`: a range of a worker's folded partition as simulate input.
public struct FleetExport: Sendable {
    public var reader: FleetTopicReader

    public init(reader: FleetTopicReader) { self.reader = reader }

    public struct Exported: Sendable {
        /// The topics read: `topics.folded` is the log whose offsets `range` gives.
        public var topics: WorkerTopics
        public var range: ReplayRange
        public var result: SimulationExport.Result
    }

    /// What a streamed export wrote.
    public struct Streamed: Sendable {
        public var topics: WorkerTopics
        public var range: ReplayRange
        public var lineCount: Int
        /// Reasons for left-out records (the first `SimulationExport.Writer.keptReasons`).
        public var skipped: [String]
        public var skippedCount: Int
    }

    /// Streams the range's lines to `write` as the records are read: memory stays that of a
    /// batch of records, whatever the range's size (a partition of millions of records exports
    /// inside the pod's memory limit).
    ///
    /// - Parameter generation: the generation of the worker's log exported (see `WorkerTopics`);
    ///   nil: the one the worker folds now, per the registry.
    public func stream(
        worker: Worker, scope: FleetReplay.Scope, from: ReplayBound, to: ReplayBound?, generation: Int? = nil,
        write: (String) throws -> Void
    ) async throws -> Streamed {
        let topics = try await WorkerTopics.resolve(worker: worker, generation: generation, reader: reader)
        let ranges = RangeReader(reader: reader, topics: topics)
        let partition = try await ranges.partition(of: scope)
        let bounds = try await ranges.offsets(partition: partition, from: from, to: to)
        if let stop = bounds.to { _ = try ReplayRange.checked(partition: partition, from: bounds.from, to: stop, given: (from, to)) }
        let user: String? = if case .user(let user) = scope { user } else { nil }
        var writer = SimulationExport.Writer(topics: topics, user: user)
        let next = try await ranges.streamLog(partition: partition, start: bounds.from, stop: bounds.to) { message in
            guard message.offset >= bounds.from, let line = writer.line(for: message) else { return }
            try write(line)
        }
        if let closing = writer.closingLine() { try write(closing) }
        let range = try ReplayRange.checked(partition: partition, from: bounds.from, to: bounds.to ?? next ?? bounds.from, given: (from, to))
        return Streamed(topics: topics, range: range, lineCount: writer.lineCount, skipped: writer.skipped, skippedCount: writer.skippedCount)
    }

    /// The range's lines collected in memory (tests and small ranges); see `stream`.
    public func run(
        worker: Worker, scope: FleetReplay.Scope, from: ReplayBound, to: ReplayBound?, generation: Int? = nil
    ) async throws -> Exported {
        var lines: [String] = []
        let streamed = try await stream(worker: worker, scope: scope, from: from, to: to, generation: generation) { lines.append($0) }
        return Exported(
            topics: streamed.topics, range: streamed.range,
            result: SimulationExport.Result(lines: lines, skipped: streamed.skipped, skippedCount: streamed.skippedCount))
    }
}
