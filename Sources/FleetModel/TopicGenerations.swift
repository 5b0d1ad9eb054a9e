/// Topic generations: how a worker moves to a new partition count without moving users away from
/// their state (DESIGN.md "Operating it", `fleetctl partitions migrate`).
///
/// A partition count cannot change under a running worker: murmur2 of the user id modulo the count
/// decides where a user's records and state live. So a worker that needs N partitions moves to a
/// new *generation* of its own topics — log, changelog, history — created with N partitions, and
/// its state is re-keyed into them. Generation 1 is the plain names of `Topics` and `Worker`;
/// generation g ≥ 2 appends `.g<g>`. Ids keep using the names records were read from (logical
/// names), and a record carried from one generation's log to the next keeps its origin
/// coordinates, so every id stays what it was.
///
/// Only workers that own their log (an inbox: the delivery, reminder and sender workers) can
/// migrate: the others fold an external topic directly, whose partition count is its producer's.
extension Worker {
    /// Whether the worker owns the log it folds (an inbox its ingest stage forwards into).
    public var ownsItsLog: Bool { !ingestSources.isEmpty }

    /// Whether `fleetctl partitions migrate` can move this worker: it owns its log and every
    /// writer of that log follows the generation registry (ingest stages, upstream workers, and
    /// the sender's effect stage through its `InboxRouteFollower`).
    public var migrates: Bool { ownsItsLog }

    /// Why `migrates` is false, for the refusal's message.
    public var whyNotMigrating: String {
        if !ownsItsLog { return "it folds \(foldedTopic) directly, whose partition count is its producer's" }
        return "it can"
    }

    /// The logical names of the worker's own topics in `generation`.
    public func topics(generation: Int) -> GenerationTopics {
        GenerationTopics(
            log: Topics.named(foldedTopic, generation: generation),
            state: Topics.named(stateTopic, generation: generation),
            history: Topics.named(historyTopic, generation: generation))
    }

    /// The worker whose log `inbox` (a generation-1 inbox name) is, if any. One lookup: every
    /// output a worker writes is routed through it (`GenerationMap.route`), and scanning the
    /// workers (building each one's ingest sources) cost ~1 % of a busy delivery worker's CPU.
    public static func owner(ofInbox inbox: String) -> Worker? {
        inboxOwners[inbox]
    }

    private static let inboxOwners: [String: Worker] = Dictionary(
        uniqueKeysWithValues: allCases.filter(\.ownsItsLog).map { ($0.foldedTopic, $0) })
}

/// A worker's log, changelog and history in one generation (logical names).
public struct GenerationTopics: Hashable, Sendable {
    public var log: String
    public var state: String
    public var history: String

    public init(log: String, state: String, history: String) {
        self.log = log; self.state = state; self.history = history
    }

    public var logDeadLetter: String { Topics.deadLetter(of: log) }
    public var all: [String] { [log, state, history, logDeadLetter] }
}

extension Topics {
    /// The single-partition topic recording, per worker, the generation it runs on and the phase
    /// of a migration in progress (key: the worker's name; the last record per key counts).
    public static let generations = "fleet.generations"

    /// `base` in generation `generation` (1: `base` itself).
    public static func named(_ base: String, generation: Int) -> String {
        generation <= 1 ? base : "\(base).g\(generation)"
    }

    /// The generation-1 name of `topic` and its generation: `rin.delivery.inbox.g2` →
    /// (`rin.delivery.inbox`, 2); a name without a generation suffix is generation 1.
    ///
    /// Read on every input record (the record's topic is checked against its allowed types), so
    /// it works on UTF-8 bytes: the `Character` view's grapheme breaking cost ~4 000
    /// instructions a call.
    public static func generationBase(of topic: String) -> (base: String, generation: Int) {
        let bytes = topic.utf8
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")) else { return (topic, 1) }
        let suffix = bytes[bytes.index(after: dot)...]
        guard suffix.first == UInt8(ascii: "g") else { return (topic, 1) }
        let number = suffix.dropFirst()
        guard number.allSatisfy({ $0 < 0x80 }), let generation = Int(Substring(number)), generation >= 2 else { return (topic, 1) }
        return (String(Substring(bytes[..<dot])), generation)
    }

    /// The topics one generation ≥ 2 of `worker` consists of, with their roles and configs: its
    /// log, changelog, history and the log's dead-letter topic.
    public static func generationSpecs(of worker: Worker, generation: Int) -> [TopicSpec] {
        let base = TopicSpec.all
        let first = worker.topics(generation: 1)
        return zip(worker.topics(generation: generation).all, first.all).compactMap { name, template in
            base.first { $0.name == template }.map { TopicSpec(name: name, role: $0.role, configs: $0.configs) }
        }
    }
}
