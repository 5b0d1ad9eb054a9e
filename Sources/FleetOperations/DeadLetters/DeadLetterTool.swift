public import FleetModel
public import FleetWorkers
import Kafka

/// `fleetctl dlq`: reads a source topic's dead-letter topic and redrives dead letters to it.
public struct DeadLetterTool: Sendable {
    public var reader: FleetTopicReader

    public init(reader: FleetTopicReader) {
        self.reader = reader
    }

    /// The source topics that have a dead-letter topic (logical names), for `--topic`.
    public static var sourceTopics: [String] {
        TopicSpec.all.filter { $0.role == .deadLetter }.map { String($0.name.dropLast(".dlq".count)) }
    }

    /// The dead-letter topic of `topic` read to its end as of now, streamed: only the dead
    /// letters `selection` names (all when it is empty) and the redrive markers are kept, so
    /// `dlq show --id` on a large DLQ holds one record, not the topic.
    public func log(of topic: String, selection: DeadLetterSelection = DeadLetterSelection()) async throws -> DeadLetterLog {
        guard Self.sourceTopics.contains(topic) else { throw DeadLetterError.notADeadLetterTopic(topic, known: Self.sourceTopics) }
        var kept: [KafkaMessage] = []
        var unreadable = 0
        try await reader.stream(try await reader.beginnings(of: [Topics.deadLetter(of: topic)])) { message in
            if RedriveMarker(message) != nil {
                kept.append(message)
            } else if let letter = DeadLetter(message) {
                if selection.matches(letter) { kept.append(message) }
            } else {
                unreadable += 1
            }
        }
        return DeadLetterLog(topic: topic, messages: kept, unreadable: unreadable)
    }

    /// `log` with the originals of its referenced dead letters (those `selection` names) read
    /// back from the source topic, each checked against the reference's size and SHA-256, so a
    /// redrive sends the very record that failed. An original the topic no longer holds (its
    /// retention passed) or that differs is marked unavailable: the redrive is refused unless a
    /// data fix (`--value-file`) replaces it.
    public func resolvingReferences(_ log: DeadLetterLog, selection: DeadLetterSelection) async throws -> DeadLetterLog {
        var resolved = log
        for (index, entry) in log.entries.enumerated() where selection.matches(entry.letter) {
            guard let reference = entry.letter.reference else { continue }
            // Only the one record is wanted: the stream stops at it instead of reading the
            // rest of the partition.
            var found: KafkaMessage?
            do {
                try await reader.stream([TopicPartition(reference.topic, reference.partition): reference.offset]) { message in
                    if message.offset == reference.offset { found = message }
                    throw StopReading()
                }
            } catch is StopReading {}
            var letter = entry.letter
            if let original = found, let value = original.value,
               value.count == reference.valueBytes, KafkaRecords.sha256Hex(value) == reference.sha256
            {
                letter.value = value
                letter.key = original.key
            } else {
                letter.originalUnavailable =
                    "its original (\(reference.valueBytes) bytes at \(reference.topic)[\(reference.partition)]@\(reference.offset)) is no longer on the topic or differs from the reference's SHA-256; send a fix with --value-file"
            }
            resolved.entries[index].letter = letter
        }
        return resolved
    }

    /// What one copy became.
    public struct Sent: Sendable {
        public var id: DeadLetterID
        public var deadLetter: SourceCoordinates
        /// Where the copy landed (logical topic name).
        public var copy: SourceCoordinates
    }

    /// What a redrive did: the copies sent (each recorded by its marker) and, if it stopped
    /// early, why. Copies before a failure stay sent.
    public struct Outcome: Sendable {
        public var sent: [Sent] = []
        public var failure: String?
    }

    /// Sends `plan`'s copies one by one, each followed by its redrive marker on the dead
    /// letter's partition, so every copy sent is recorded before the next; stops at the first
    /// failure.
    public func redrive(_ plan: RedrivePlan, namespace: TopicNamespace) async -> Outcome {
        var outcome = Outcome()
        guard !plan.copies.isEmpty else { return outcome }
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: reader.configuration, logger: reader.logger)
        } catch {
            outcome.failure = "cannot create a producer: \(error)"
            return outcome
        }
        for copy in plan.copies {
            let landed: SourceCoordinates
            do {
                let report = try await producer.send(copy.record)
                landed = SourceCoordinates(
                    topic: namespace.logical(report.topic) ?? report.topic, partition: report.partition, offset: report.offset)
            } catch {
                outcome.failure = "\(copy.letter.id): sending the copy failed, nothing sent for it: \(error)"
                break
            }
            do {
                let marker = RedriveMarker(deadLetter: copy.letter.position, copy: landed)
                _ = try await producer.send(marker.record(key: copy.letter.key, in: namespace))
            } catch {
                outcome.failure = DeadLetterError.markerNotWritten(id: copy.letter.id, copy: landed, error: "\(error)").description
                break
            }
            outcome.sent.append(Sent(id: copy.letter.id, deadLetter: copy.letter.position, copy: landed))
        }
        await producer.close()
        return outcome
    }
}
