import Synchronization

extension KafkaConsumer {
    /// Reads batches until the messages gathered so far satisfy `isDone`, or `timeout` passes,
    /// and returns every message read — also when the timeout struck, so a caller that expected
    /// more can say what did arrive.
    ///
    /// For tools and tests that wait for an expected set of records (`fleetctl decisions`,
    /// integration tests); a worker iterates `batches` itself. `isDone` sees the whole
    /// accumulation after each batch.
    public func collect(
        timeout: Duration, until isDone: @escaping @Sendable ([KafkaMessage]) -> Bool
    ) async throws -> [KafkaMessage] {
        let received = CollectedMessages()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await batch in self.batches {
                    if received.append(batch, isDone: isDone) { return }
                }
            }
            group.addTask { try await Task.sleep(for: timeout) }
            // Whichever finishes first ends the wait; the other is cancelled (the sequence ends
            // on cancellation, the sleep's CancellationError is discarded with its task).
            try await group.next()
            group.cancelAll()
        }
        return received.messages
    }

    /// Reads until `count` messages arrived or `timeout` passed; returns what arrived.
    public func collect(count: Int, timeout: Duration) async throws -> [KafkaMessage] {
        try await collect(timeout: timeout) { $0.count >= count }
    }
}

/// Messages gathered by the reading task, readable once it is done or cancelled.
private final class CollectedMessages: Sendable {
    private let stored = Mutex<[KafkaMessage]>([])

    /// Appends `batch` and tells whether the accumulation is complete.
    func append(_ batch: [KafkaMessage], isDone: ([KafkaMessage]) -> Bool) -> Bool {
        stored.withLock { messages in
            messages += batch
            return isDone(messages)
        }
    }

    var messages: [KafkaMessage] { stored.withLock { $0 } }
}
