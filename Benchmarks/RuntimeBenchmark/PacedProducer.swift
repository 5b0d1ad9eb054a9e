import FleetWorkers
import Foundation
import Kafka
import Logging

/// Produces records in real time at a fixed rate, as upstream workers would write a burst: every
/// `tick` it sends the records due by then (`rate` per second since the first), each stamped
/// with the wall clock when it is sent (its `CreateTime`; a `LogAppendTime` topic such as the
/// inboxes replaces it with the broker's). The batches' acknowledgements are awaited
/// concurrently, so a slow acknowledgement never holds back the pace; a late tick is caught up
/// in the next batch. librdkafka's own batching stays at its default (`linger.ms` = 5). One
/// producer serves every `produce`, so only the first one pays for connecting.
struct PacedProducer {
    var rate: Double
    var tick: Duration = .milliseconds(5)
    private let producer: KafkaProducer

    init(rate: Double, brokers: String) throws {
        self.rate = rate
        producer = try KafkaProducer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "linger.ms": "5",
        ]), logger: Logger(label: "runtime-benchmark"))
    }

    /// Looks up `records`' topics before the first send, so that a burst's first records do not
    /// wait for this producer's own metadata round trip (the figure is the worker's latency).
    func prepare(for records: ArraySlice<ProducerRecord>, namespace: TopicNamespace) async throws {
        try await producer.prepare(topics: Set(records.map(\.topic)).map(namespace.physical).sorted())
    }

    /// When a marked record was handed to the producer.
    struct Sent: Sendable {
        var instant: ContinuousClock.Instant
        var epochMilliseconds: Int64
    }

    struct Result {
        /// Of the marked positions.
        var sent: [Int: Sent]
        /// When the first record was sent.
        var started: ContinuousClock.Instant
        /// From the first send to the last acknowledgement.
        var seconds: Double
    }

    /// Produces `records` (logical topic names) into `namespace` and waits until every one is
    /// acknowledged. `marked` are indices of `records` whose send instants to return.
    func produce(
        _ records: ArraySlice<ProducerRecord>, marking marked: Set<Int>, namespace: TopicNamespace
    ) async throws -> Result {
        let producer = producer
        let start = ContinuousClock.now
        var sent: [Int: Sent] = [:]
        try await withThrowingTaskGroup(of: [Int: Sent].self) { group in
            var next = records.startIndex
            while next < records.endIndex {
                let elapsed = (ContinuousClock.now - start).seconds
                let due = min(records.endIndex, records.startIndex + Int(elapsed * rate) + 1)
                if due > next {
                    let batch = next..<due
                    next = due
                    group.addTask {
                        let instant = ContinuousClock.now
                        let stamp = Int64((Date().timeIntervalSince1970 * 1000).rounded())
                        _ = try await producer.send(batch.map { index in
                            var record = records[index]
                            record.topic = namespace.physical(record.topic)
                            record.timestamp = stamp
                            return record
                        })
                        var sent: [Int: Sent] = [:]
                        for index in batch where marked.contains(index) {
                            sent[index] = Sent(instant: instant, epochMilliseconds: stamp)
                        }
                        return sent
                    }
                }
                let ticks = Int(((ContinuousClock.now - start) / tick).rounded(.down)) + 1
                try await Task.sleep(until: start + tick * ticks, clock: .continuous)
            }
            for try await batchSent in group {
                sent.merge(batchSent) { first, _ in first }
            }
        }
        let seconds = (ContinuousClock.now - start).seconds
        return Result(sent: sent, started: start, seconds: seconds)
    }

    func close() async {
        await producer.close()
    }
}
