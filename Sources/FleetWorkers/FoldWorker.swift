public import FleetModel
import Kafka
public import Logging
public import ServiceLifecycle
import Synchronization

/// A worker that folds one topic's partitions with a `UserProcessor` and writes the outputs back
/// to Kafka, at least once: a batch's outputs (and dead letters) are produced and acknowledged
/// before its offsets are committed, so a crash can only repeat the uncommitted tail, which
/// re-creates byte-identical records with identical ids (DESIGN.md principles 3 and 4).
///
/// State lives in memory per assigned partition; a partition that moves to another member starts
/// there from an empty state. Restoring state from a changelog, exactly-once transactions, ticks
/// and the HTTP port belong to the stateful runtime that replaces this loop; the processor seam
/// stays the same.
public struct FoldWorker<P: UserProcessor>: Service {
    public let settings: WorkerSettings
    public let processor: P
    public let topic: String
    private let logger: Logger

    public init(settings: WorkerSettings, processor: P, topic: String? = nil, logger: Logger) {
        self.settings = settings
        self.processor = processor
        self.topic = topic ?? settings.worker.foldedTopic
        self.logger = logger
    }

    public func run() async throws {
        let consumer = try KafkaConsumer(
            configuration: settings.consumerConfiguration, maxBatchSize: settings.batchMaxRecords,
            logger: logger)
        let producer = try KafkaProducer(configuration: settings.producerConfiguration, logger: logger)
        let partitions = PartitionTable<P>(processor: processor)
        let lock = AsyncLock()
        let logger = self.logger

        let namespace = settings.topics
        try consumer.subscribe(topics: [namespace.physical(topic)]) { event in
            // Runs on the consumer's poll thread before the change takes effect. Waiting for the
            // lock means a batch in flight is produced and committed before partitions move.
            await lock.withLock {
                switch event.kind {
                case .assigned:
                    partitions.add(event.partitions.map(\.partition))
                case .revoked, .lost:
                    partitions.remove(event.partitions.map(\.partition))
                }
            }
            logger.info("rebalance", metadata: ["event": "\(event)"])
        }
        logger.info("worker started", metadata: ["topic": "\(topic)", "group": "\(settings.groupId)"])

        do {
            for try await batch in consumer.batches.cancelOnGracefulShutdown() {
                try await lock.withLock {
                    try await process(batch, partitions: partitions, producer: producer, consumer: consumer)
                }
            }
        } catch {
            logger.error("worker stopped on error", metadata: ["error": "\(error)"])
            await consumer.close()
            await producer.close()
            throw error
        }
        logger.info("shutting down: leaving the group")
        await consumer.close()
        await producer.close()
    }

    /// Folds one batch, produces everything it yields, then commits the batch's offsets.
    private func process(
        _ batch: [KafkaMessage], partitions: PartitionTable<P>, producer: KafkaProducer, consumer: KafkaConsumer
    ) async throws {
        var records: [ProducerRecord] = []
        var nextOffsets: [TopicPartition: Int64] = [:]
        let namespace = settings.topics
        for physicalMessage in batch {
            // A message fetched before its partition was revoked is left for the new owner.
            guard partitions.owns(physicalMessage.partition) else { continue }
            var message = physicalMessage
            message.topic = namespace.logical(physicalMessage.topic) ?? physicalMessage.topic
            let timestamp = Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0)
            let outcome: Result<FleetRecord, RecordError> = Result { () throws(RecordError) in
                try KafkaRecords.decode(message)
            }
            switch outcome {
            case .failure(let error):
                logger.warning("dead-lettered", metadata: [
                    "source": "\(message.topicPartition)@\(message.offset)", "error": "\(error.message)",
                ])
                records.append(KafkaRecords.deadLetter(message, error: error, in: namespace))
            case .success(let record):
                guard let step = partitions.apply(record, timestamp: timestamp, coordinates: KafkaRecords.coordinates(message))
                else { continue }
                records.append(contentsOf: step.outputs.map { KafkaRecords.producerRecord($0, in: namespace) })
                if let error = step.deadLetter {
                    logger.warning("dead-lettered", metadata: [
                        "source": "\(message.topicPartition)@\(message.offset)", "error": "\(error.message)",
                    ])
                    records.append(KafkaRecords.deadLetter(message, error: error, in: namespace))
                }
            }
            nextOffsets[physicalMessage.topicPartition] = message.offset + 1
        }
        guard !nextOffsets.isEmpty else { return }
        _ = try await producer.send(records)
        try await consumer.commit(nextOffsets)
    }
}

/// The folds of the partitions this member owns. Touched by the batch loop and the rebalance
/// handler, which are serialised by the worker's `AsyncLock`; the mutex only makes the sharing
/// safe to the compiler.
final class PartitionTable<P: UserProcessor>: Sendable {
    private let processor: P
    private let folds = Mutex<[Int32: PartitionFold<P>]>([:])

    init(processor: P) { self.processor = processor }

    func add(_ partitions: [Int32]) {
        folds.withLock { folds in
            for partition in partitions where folds[partition] == nil {
                folds[partition] = PartitionFold(processor: processor)
            }
        }
    }

    func remove(_ partitions: [Int32]) {
        folds.withLock { folds in
            for partition in partitions { folds[partition] = nil }
        }
    }

    func owns(_ partition: Int32) -> Bool { folds.withLock { $0[partition] != nil } }

    /// Folds `record` into its partition, or returns nil when this member no longer owns it.
    func apply(_ record: FleetRecord, timestamp: Timestamp, coordinates: SourceCoordinates) -> FoldStep<P.State>? {
        folds.withLock { folds in
            folds[coordinates.partition]?.apply(record, timestamp: timestamp, coordinates: coordinates)
        }
    }
}
