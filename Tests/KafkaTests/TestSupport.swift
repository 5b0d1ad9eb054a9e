import Kafka
import Synchronization
import Testing

/// Collects what rebalance handlers saw, in call order across consumers.
actor RebalanceLog {
    struct Entry: Sendable, CustomStringConvertible {
        var consumer: String
        var event: RebalanceEvent
        /// The consumer's assignment while the handler ran, i.e. before librdkafka applied the event.
        var assignmentDuringHandler: Set<TopicPartition>
        var description: String { "\(consumer): \(event) while assigned \(assignmentDuringHandler.sorted())" }
    }

    private(set) var entries: [Entry] = []

    func append(_ entry: Entry) { entries.append(entry) }

    /// A handler that records each event with the assignment `box`'s consumer has at that moment.
    nonisolated func handler(named name: String, box: ConsumerBox) -> RebalanceHandler {
        { event in
            let assignment = (try? box.consumer?.assignment()) ?? []
            await self.append(Entry(consumer: name, event: event, assignmentDuringHandler: Set(assignment)))
        }
    }
}

/// Lets a rebalance handler reach the consumer it is installed on (created after the handler).
final class ConsumerBox: Sendable {
    private let stored = Mutex<KafkaConsumer?>(nil)
    var consumer: KafkaConsumer? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// Keeps a consumer polling, so librdkafka can run its rebalances, and keeps what it received.
final class BackgroundReader: Sendable {
    private let task: Task<Void, any Error>
    private let received = MessageBuffer()

    init(_ consumer: KafkaConsumer) {
        let received = received
        task = Task {
            for try await batch in consumer.batches { _ = received.append(batch) }
        }
    }

    var messages: [KafkaMessage] { received.messages }

    /// Stops polling (the consumer stays open).
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// Polls `condition` every 100 ms until it holds; records an issue and throws after `timeout`.
func eventually(_ what: String, timeout: Duration = .seconds(30),
                sourceLocation: SourceLocation = #_sourceLocation,
                _ condition: @Sendable () async throws -> Bool) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
    throw TimedOut()
}

struct TimedOut: Error {}
