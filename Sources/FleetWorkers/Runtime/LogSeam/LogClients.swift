public import Kafka
public import Logging

/// Where a `WorkerRuntime` gets its clients of the log: the one seam between the runtime and
/// Kafka. Production uses `KafkaLogClients` (the default, built from `WorkerSettings`); fast
/// tests pass an in-memory log's clients (`FleetLogTesting`) and run the same runtime code —
/// fold, restore, commit units, rebalances — without a broker.
///
/// Each call makes a new client; the runtime makes one consumer, one producer and one marker
/// producer per run on a topic layout, and closes them when the run ends.
public protocol LogClients: Sendable {
    func makeAdmin() throws -> any LogAdmin
    /// The group member the runtime folds through (`WorkerSettings.runtimeConsumerConfiguration`).
    func makeConsumer() throws -> any LogConsumer
    /// The producer units go through: transactional under exactly-once (the runtime calls
    /// `initTransactions` on it), plain otherwise.
    func makeProducer() throws -> any LogProducer
    /// A non-transactional producer, for restore markers and cuts: they must be visible on their
    /// own, outside any unit's transaction.
    func makeMarkerProducer() throws -> any LogProducer
    /// What restores read the state changelog with.
    func makeChangelogReader() -> any ChangelogReading
    /// Reads `offsets`' partitions read_committed from the given offsets to their ends as of the
    /// call, on a reader of its own (not the group's member): the generation registry.
    func readToEnd(_ offsets: [TopicPartition: Int64], purpose: String) async throws -> [KafkaMessage]
}

/// The brokers `WorkerSettings` name, through librdkafka.
public struct KafkaLogClients: LogClients {
    public let settings: WorkerSettings
    public let logger: Logger

    public init(settings: WorkerSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    public func makeAdmin() throws -> any LogAdmin {
        try KafkaAdmin(configuration: settings.producerConfiguration, logger: logger)
    }

    public func makeConsumer() throws -> any LogConsumer {
        try KafkaConsumer(configuration: settings.runtimeConsumerConfiguration, maxBatchSize: settings.batchMaxRecords, logger: logger)
    }

    public func makeProducer() throws -> any LogProducer {
        try KafkaProducer(configuration: settings.runtimeProducerConfiguration, logger: logger)
    }

    public func makeMarkerProducer() throws -> any LogProducer {
        try KafkaProducer(configuration: settings.producerConfiguration, logger: logger)
    }

    public func makeChangelogReader() -> any ChangelogReading {
        KafkaChangelogReader(configuration: settings.restoreConsumerConfiguration, logger: logger)
    }

    public func readToEnd(_ offsets: [TopicPartition: Int64], purpose: String) async throws -> [KafkaMessage] {
        try await KafkaConsumer.readToEnd(
            offsets, configuration: settings.producerConfiguration, groupId: purpose, settle: .milliseconds(200), timeout: .seconds(60), logger: logger)
    }
}
