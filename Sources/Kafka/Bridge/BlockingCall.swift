import Foundation

/// Runs a blocking librdkafka call on a dedicated thread and suspends the calling task until it
/// returns, so blocking never happens on the Swift concurrency pool.
///
/// One short-lived thread per call: blocking calls (commits, transaction steps, metadata, admin)
/// are infrequent compared to their own latency, and a fresh thread can never deadlock behind
/// another blocked call — e.g. a commit issued from a rebalance handler while `close` is blocked.
func runBlocking<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws(KafkaError) -> T) async throws(KafkaError) -> T {
    let result: Result<T, KafkaError> = await withCheckedContinuation { continuation in
        let thread = Thread {
            do throws(KafkaError) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        thread.name = "kafka-\(name)"
        thread.start()
    }
    return try result.get()
}
