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
        /// Why each record left out was left out: `partition:offset: reason`.
        public var skipped: [String]
    }

    public static func lines(_ log: [KafkaMessage], topics: WorkerTopics, user: String?) -> Result {
        var lines: [String] = []
        var skipped: [String] = []
        var clock: Timestamp?
        var lastWritten: Timestamp?
        var last: KafkaMessage?
        for message in log {
            let stamped = message.timestamp.map(Timestamp.init(millisecondsSinceEpoch:))
            let at = [clock, stamped].compactMap { $0 }.max() ?? Timestamp(millisecondsSinceEpoch: 0)
            clock = at
            last = message
            let key = message.key.map { String(decoding: $0, as: UTF8.self) }
            if let user, key != user { continue }
            let topic = sourceTopic(of: message, topics: topics)
            guard let value = message.value else {
                skipped.append("\(message.partition):\(message.offset): no value")
                continue
            }
            let line = envelope(at: at, topic: topic, key: key, value: String(decoding: value, as: UTF8.self))
            do {
                guard try SimulationInput.parse(line, line: lines.count + 1) != nil, !line.contains("\n") else {
                    skipped.append("\(message.partition):\(message.offset): empty value")
                    continue
                }
            } catch {
                skipped.append("\(message.partition):\(message.offset): not a simulate line (\(error.description))")
                continue
            }
            lines.append(line)
            lastWritten = at
        }
        if user != nil, topics.worker.ingestTopic != nil, let clock, let last, lastWritten.map({ $0 < clock }) ?? true {
            let tick = Tick(id: "export:\(topics.folded):\(last.partition):\(last.offset)")
            lines.append(envelope(at: clock, topic: topics.worker.foldedTopic, key: nil, value: RecordCodec.encodeString(.tick(tick))))
        }
        return Result(lines: lines, skipped: skipped)
    }

    /// The external topic of a record the ingest stage forwarded, else the folded topic under
    /// its generation-1 name: a simulation has one generation, whatever the one exported.
    static func sourceTopic(of message: KafkaMessage, topics: WorkerTopics) -> String {
        let origin = KafkaRecords.origin(of: message)
        if origin.index == nil, origin.coordinates.topic == topics.worker.ingestTopic { return origin.coordinates.topic }
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

    /// - Parameter generation: the generation of the worker's log exported (see `WorkerTopics`);
    ///   nil: the one the worker folds now, per the registry.
    public func run(
        worker: Worker, scope: FleetReplay.Scope, from: ReplayBound, to: ReplayBound?, generation: Int? = nil
    ) async throws -> Exported {
        let topics = try await WorkerTopics.resolve(worker: worker, generation: generation, reader: reader)
        let read = try await RangeReader(reader: reader, topics: topics).read(scope: scope, from: from, to: to)
        let user: String? = if case .user(let user) = scope { user } else { nil }
        return Exported(topics: topics, range: read.range, result: SimulationExport.lines(read.rangeLog, topics: topics, user: user))
    }
}
