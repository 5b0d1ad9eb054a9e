import DeliveryWorkload
import FleetModel
import FleetWorkers
import Kafka
import Logging

/// Pre-fills the delivery inbox with the first `count` records of `DeliveryEngineBenchmark`'s
/// realistic mix (sign-ups, opens, score/enrichment bursts, security requests over three days,
/// in time order), keyed by user, timestamped with their log time, in canonical encoding: the
/// same bytes an ingest stage would have forwarded.
enum InboxFill {
    /// The records, from a workload of enough users (the mix averages some seven per user).
    static func records(count: Int) -> [ProducerRecord] {
        Workload.firstRecords(count).map { at, userId, record in
            ProducerRecord(topic: Topics.deliveryInbox, key: userId, value: RecordCodec.encode(record),
                           timestamp: at.millisecondsSinceEpoch)
        }
    }

    /// Produces `records` (logical topic names) into `namespace`, acknowledged, in chunks so
    /// librdkafka's local queue never fills.
    static func produce(_ records: [ProducerRecord], brokers: String, namespace: TopicNamespace) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "linger.ms": "20", "batch.num.messages": "10000",
        ]), logger: Logger(label: "runtime-benchmark"))
        var start = records.startIndex
        while start < records.endIndex {
            let end = min(start + 50_000, records.endIndex)
            _ = try await producer.send(records[start..<end].map { record in
                var physical = record
                physical.topic = namespace.physical(record.topic)
                return physical
            })
            start = end
        }
        await producer.close()
    }
}
