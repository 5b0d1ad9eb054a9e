import FleetModel
import Kafka
import Logging

/// How the runtime dead-letters an input it cannot process, wherever that happens (a folding
/// lane, the ingest stage, the carry-over): the record for `<topic>.dlq`, logged and counted.
enum DeadLetters {
    /// `quarantinedAfter`: the input is dead-lettered because its records failed to produce
    /// that many times; it is then always carried by reference (the smallest dead letter
    /// there is), since the broker may have refused the value itself.
    static func record(
        for message: KafkaMessage, error: RecordError, settings: WorkerSettings, observer: (any RuntimeObserver)?, logger: Logger,
        quarantinedAfter: Int? = nil
    ) -> ProducerRecord {
        logger.warning("dead-lettered", metadata: [
            "source": "\(message.topic)[\(message.partition)]@\(message.offset)", "error": "\(error.message)",
            "bytes": "\((message.key?.count ?? 0) + (message.value?.count ?? 0))",
        ])
        var limits = settings.limits
        var extra: [KafkaHeader] = []
        if let quarantinedAfter {
            limits.maxRecordBytes = 0
            extra = [KafkaHeader(KafkaRecords.Header.quarantined, String(quarantinedAfter))]
        }
        observer?.deadLetter(topic: message.topic)
        observer?.recordOut(topic: Topics.deadLetter(of: message.topic), count: 1)
        return KafkaRecords.deadLetter(message, error: error, in: settings.topics, limits: limits, extraHeaders: extra)
    }
}
