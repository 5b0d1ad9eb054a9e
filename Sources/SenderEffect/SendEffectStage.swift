public import FleetModel
public import Kafka
public import Logging
public import ProviderClients
import ServiceLifecycle

/// The sender's effect stage on Kafka (issue 17, "act at the edge"): reads the attempts the
/// fold decided (`rin.sender.attempts`), makes the provider calls, and writes each answer into
/// the sender's inbox as a `send.result`, in one transaction with the consumed offsets.
///
/// Exactly-once ends at the provider: a stage that dies after a call and before its commit
/// calls again for the same attempt on restart, with the same attempt id, hence the same
/// `Idempotency-Key` (email: the provider answers without sending) and `apns-id` /
/// `apns-collapse-id` / FCM `collapse_key` (push: a copy replaces the first on the device).
/// Every attempt gets exactly one committed answer.
public struct SendEffectStage: Sendable {
    public struct TopicNames: Sendable {
        public var attempts: String
        /// Where the answers go: the sender inbox's current generation (`AnswerRoute`).
        public var inbox: AnswerRoute

        public init(attempts: String = Topics.sendAttempts, inbox: AnswerRoute = AnswerRoute(Topics.senderInbox)) {
            self.attempts = attempts; self.inbox = inbox
        }

        public var deadLetter: String { Topics.deadLetter(of: attempts) }
    }

    let consumerConfiguration: KafkaConfiguration
    let producerConfiguration: KafkaConfiguration
    let effect: ProviderEffect
    let topics: TopicNames
    let concurrency: Int
    let logger: Logger
    let beforeCommit: (@Sendable ([SendResult]) async throws -> Void)?

    /// - Parameters:
    ///   - consumer: needs `group.id`; the stage reads committed records only.
    ///   - producer: needs `transactional.id` (one per stage instance).
    ///   - concurrency: provider calls in flight at once (HTTP/2 streams share connections).
    ///   - beforeCommit: called with a batch's answers after its calls and before they
    ///     commit; a test uses it to kill the stage at the worst moment.
    public init(
        consumer: KafkaConfiguration, producer: KafkaConfiguration, effect: ProviderEffect, topics: TopicNames = TopicNames(),
        concurrency: Int = 64, logger: Logger, beforeCommit: (@Sendable ([SendResult]) async throws -> Void)? = nil
    ) {
        var consumer = consumer
        consumer.isolationLevel = .readCommitted
        self.consumerConfiguration = consumer
        self.producerConfiguration = producer
        self.effect = effect
        self.topics = topics
        self.concurrency = max(1, concurrency)
        self.logger = logger
        self.beforeCommit = beforeCommit
    }

    /// Runs until the task is cancelled, a graceful shutdown (ServiceLifecycle) or a Kafka
    /// failure; closes its clients either way. A graceful shutdown ends it between batches: the
    /// calls of the batch in hand finish and commit with their offsets, none is cut off.
    public func run() async throws {
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, maxBatchSize: 512, logger: logger)
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        } catch {
            await consumer.close()
            throw error
        }
        do {
            try await producer.initTransactions()
            try consumer.subscribe(topics: [topics.attempts])
            for try await batch in consumer.batches.cancelOnGracefulShutdown() {
                try Task.checkCancellation()
                try await process(batch, consumer: consumer, producer: producer)
            }
        } catch {
            await producer.close()
            await consumer.close()
            throw error
        }
        await producer.close()
        await consumer.close()
    }

    private func process(_ batch: [KafkaMessage], consumer: KafkaConsumer, producer: KafkaProducer) async throws {
        var attempts: [SendAttempt] = []
        var deadLetters: [ProducerRecord] = []
        var next: [TopicPartition: Int64] = [:]
        for message in batch {
            next[message.topicPartition] = max(next[message.topicPartition] ?? 0, message.offset + 1)
            do {
                guard case .sender(.attempt(let attempt)) = try RecordCodec.decode(message.value ?? [], topic: topics.attempts) else {
                    throw RecordError("not a send.attempt")
                }
                attempts.append(attempt)
            } catch {
                // Only the fold writes here, so this is a bug or a stray producer: keep it, say why.
                logger.error("attempt record refused", metadata: ["offset": "\(message.topicPartition):\(message.offset)", "error": "\(error)"])
                deadLetters.append(ProducerRecord(
                    topic: topics.deadLetter, key: message.key, value: message.value,
                    headers: [KafkaHeader("error", Array("\(error)".utf8)), KafkaHeader("source", Array("\(message.topicPartition):\(message.offset)".utf8))]))
            }
        }
        // Known before any call (at startup the route waits for its first registry read), and
        // one per batch: a batch's answers go to one generation of the inbox.
        let inbox = try await topics.inbox.current()
        let results = await perform(attempts)
        try await beforeCommit?(results)
        try producer.beginTransaction()
        do {
            let records = results.map {
                ProducerRecord(topic: inbox, key: Array($0.userId.utf8), value: RecordCodec.encode(.sender(.result($0))))
            }
            _ = try await producer.send(records + deadLetters)
            try await producer.sendOffsetsToTransaction(next, groupMetadata: try consumer.groupMetadata())
            try await producer.commitTransaction()
        } catch {
            try? await producer.abortTransaction()
            throw error
        }
    }

    /// The answers in the attempts' order, at most `concurrency` calls at a time.
    private func perform(_ attempts: [SendAttempt]) async -> [SendResult] {
        await withTaskGroup(of: (Int, SendResult).self) { group in
            var results = [SendResult?](repeating: nil, count: attempts.count)
            var started = 0
            for _ in 0..<min(concurrency, attempts.count) {
                let index = started
                group.addTask { (index, await effect.perform(attempts[index])) }
                started += 1
            }
            for await (index, result) in group {
                results[index] = result
                if started < attempts.count {
                    let index = started
                    group.addTask { (index, await effect.perform(attempts[index])) }
                    started += 1
                }
            }
            return results.compactMap { $0 }
        }
    }
}
