public import FleetModel
public import FleetWorkers

/// The logical topics a replay or export of one worker reads, named in this one place (from
/// `Worker`) so that a change of naming is made here only.
///
/// A worker that owns its log may have migrated to another partition count
/// (`fleetctl partitions migrate`): its log, changelog, history and dead letters then exist in
/// several generations (`rin.delivery.inbox.g2`, `delivery-worker.state.g2`, …; see
/// `TopicGenerations`), each a log of its own with its own offsets. A replay reads one
/// generation, `generation`.
public struct WorkerTopics: Sendable, Hashable {
    public var worker: Worker
    /// The generation of the worker's own topics read (1: the plain names).
    public var generation: Int
    /// The newest generation of the delivery worker's inbox that exists: an upstream worker's
    /// outputs went into every generation up to it (producers switch at a migration's end).
    public var deliveryInboxGeneration: Int

    public init(worker: Worker, generation: Int = 1, deliveryInboxGeneration: Int = 1) {
        self.worker = worker
        self.generation = max(1, generation)
        self.deliveryInboxGeneration = max(1, deliveryInboxGeneration)
    }

    /// The topics the registry (`fleet.generations`) says to read: the generation `worker` folds
    /// (during a cutover, the one before, which is the last it folded), and every generation of
    /// the delivery inbox that exists.
    public init(worker: Worker, registry: GenerationMap) {
        let own = registry.entry(for: worker)
        self.init(
            worker: worker, generation: own.foldGeneration ?? own.generation - 1,
            deliveryInboxGeneration: registry.entry(for: .delivery).generation)
    }

    private var own: GenerationTopics { worker.topics(generation: generation) }

    /// The log the worker folds: what is replayed.
    public var folded: String { own.log }
    /// `<worker>.state`: states and log-time positions.
    public var state: String { own.state }
    /// `<worker>.history`: the state changes, with before and after images.
    public var history: String { own.history }
    /// Where the fold's dead letters go.
    public var deadLetter: String { own.logDeadLetter }
    /// The topics the worker's fold writes its outputs to: the delivery worker's four output
    /// topics, the sender's attempts, receipts and invalidations, or every generation of the delivery inbox for the upstream workers.
    public var outputs: [String] {
        switch worker {
        case .delivery: [Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents]
        // `device.invalidated` goes to the device registry, among the apps' registrations.
        case .sender: [Topics.sendAttempts, Topics.receipts, Topics.devices]
        case .score, .sync, .reminder, .access:
            (1...deliveryInboxGeneration).map { Worker.delivery.topics(generation: $0).log }
        }
    }
}

extension WorkerTopics {
    /// The topics of `worker` in `generation`, or (nil) in the generation the registry names;
    /// reads the registry either way for the delivery inbox's generations.
    public static func resolve(worker: Worker, generation: Int?, reader: FleetTopicReader) async throws -> WorkerTopics {
        let registry = try await GenerationRegistry.read(configuration: reader.configuration, namespace: reader.namespace, logger: reader.logger)
        var topics = WorkerTopics(worker: worker, registry: registry)
        if let generation { topics.generation = max(1, generation) }
        return topics
    }
}
