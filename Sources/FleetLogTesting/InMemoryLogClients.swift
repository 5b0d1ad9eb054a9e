public import FleetWorkers
public import Kafka

/// One instance's clients of an `InMemoryLog` (a worker process, as far as the log goes): what
/// a test passes to `WorkerRuntime(…, clients:)`. Faults are injected, and crashes happen, per
/// instance.
public struct InMemoryLogClients: LogClients {
    public let log: InMemoryLog
    public let instance: String
    /// Under exactly-once the runtime's producer is transactional.
    public let transactional: Bool
    public let maxBatchSize: Int

    public init(log: InMemoryLog, instance: String, guarantee: DeliveryGuarantee, maxBatchSize: Int = 200) {
        self.log = log
        self.instance = instance
        self.transactional = guarantee == .exactlyOnce
        self.maxBatchSize = maxBatchSize
    }

    public func makeAdmin() throws -> any LogAdmin { Admin(log: log) }

    public func makeConsumer() throws -> any LogConsumer {
        try log.checkAlive(instance)
        return InMemoryConsumer(log: log, instance: instance, maxBatchSize: maxBatchSize)
    }

    public func makeProducer() throws -> any LogProducer {
        try log.checkAlive(instance)
        return InMemoryProducer(log: log, instance: instance, transactional: transactional, isMarkerProducer: false)
    }

    public func makeMarkerProducer() throws -> any LogProducer {
        try log.checkAlive(instance)
        return InMemoryProducer(log: log, instance: instance, transactional: false, isMarkerProducer: true)
    }

    public func makeChangelogReader() -> any ChangelogReading { Reader(log: log, instance: instance) }

    public func readToEnd(_ offsets: [TopicPartition: Int64], purpose: String) async throws -> [KafkaMessage] {
        log.state.withLock { state in
            offsets.keys.sorted().flatMap { partition in
                InMemoryLog.visible(partition, from: offsets[partition] ?? 0, limit: .max, in: state).messages
            }
        }
    }

    struct Admin: LogAdmin {
        let log: InMemoryLog

        func partitionCounts(of topics: [String]) async throws(KafkaError) -> [String: Int] {
            log.partitionCounts(of: topics)
        }
    }

    /// Reads a changelog partition read_committed up to an offset: waits while a transaction
    /// still open holds records before it (the last stable offset), as a read_committed reader
    /// does.
    struct Reader: ChangelogReading {
        let log: InMemoryLog
        let instance: String

        func read(
            _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration, into images: ChangelogImages
        ) async throws -> ChangelogImages {
            var images = images
            for message in try await records(partition, from: start, until: end, timeout: timeout) {
                try images.read(message)
            }
            return images
        }

        func lastCountedUsers(
            _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration
        ) async throws -> Int? {
            var users: Int?
            for message in try await records(partition, from: start, until: end, timeout: timeout) {
                if case .position(_, _, let counted?) = try? ChangelogRecords.controlEntry(of: message) { users = counted }
            }
            return users
        }

        private func records(
            _ partition: TopicPartition, from start: Int64, until end: Int64, timeout: Duration
        ) async throws -> [KafkaMessage] {
            let crashesAfter = try log.step(.restoreRead(partition: partition.partition), instance: instance)
            if crashesAfter { throw log.crashAfter(.restoreRead(partition: partition.partition), instance: instance) }
            var waited = Duration.zero
            while true {
                try log.checkAlive(instance)
                let ready = log.state.withLock { state -> [KafkaMessage]? in
                    guard InMemoryLog.lastStableOffset(partition, in: state) >= end else { return nil }
                    return InMemoryLog.visible(partition, from: max(0, start), limit: .max, in: state).messages.filter { $0.offset < end }
                }
                if let ready { return ready }
                guard waited < timeout else {
                    throw KafkaError(code: -185, name: "_TIMED_OUT", message: "restore read of \(partition) timed out (in-memory log)")
                }
                try await Task.sleep(for: .milliseconds(1))
                waited += .milliseconds(1)
            }
        }
    }
}
