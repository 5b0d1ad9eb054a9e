public import FleetModel
public import FleetWorkers
public import Kafka

/// What to redrive and how (`fleetctl dlq redrive`).
public struct RedriveRequest: Sendable {
    public var selection: DeadLetterSelection
    /// Redrive every dead letter of the topic; required when `selection` is empty, so that a
    /// forgotten option never redrives a whole DLQ.
    public var all: Bool
    /// Send another copy of dead letters already redriven.
    public var force: Bool
    /// A data fix: the value to send instead of the dead letter's (exactly one dead letter).
    public var replacementValue: [UInt8]?
    /// The record contract's sizes the workers run with: a copy they would refuse is refused
    /// here first.
    public var limits: RecordLimits

    public init(
        selection: DeadLetterSelection, all: Bool = false, force: Bool = false, replacementValue: [UInt8]? = nil,
        limits: RecordLimits = .standard
    ) {
        self.selection = selection
        self.all = all
        self.force = force
        self.replacementValue = replacementValue
        self.limits = limits
    }
}

/// The copies a redrive will send and the dead letters it will not, decided from a
/// `DeadLetterLog` alone (no I/O), so `--dry-run` shows exactly what a real run sends.
///
/// A copy goes to the source topic with the dead letter's key (or, for a data fix, the fixed
/// record's user), value and timestamp, and headers naming the failed record's identity plus
/// `redriven-from` (`KafkaRecords.redriveHeaders`): the workers fold it with the coordinates the
/// failed record had, so its outputs get the ids the record would have had.
public struct RedrivePlan: Sendable {
    public struct Copy: Sendable {
        public var letter: DeadLetter
        /// The record to produce (physical topic name).
        public var record: ProducerRecord
        /// Whether the value is a data fix rather than the dead letter's own.
        public var isFixed: Bool
    }

    public struct Refusal: Hashable, Sendable, CustomStringConvertible {
        public var id: DeadLetterID
        public var reason: String
        public var description: String { "\(id): \(reason)" }
    }

    public var topic: String
    public var copies: [Copy]
    public var refusals: [Refusal]

    /// Plans `request` against `log`. Throws for a request that cannot be meant as given
    /// (nothing selected, unknown ids, a fix for several records, an invalid fix); dead letters
    /// that cannot be sent for their own reasons become refusals.
    public init(log: DeadLetterLog, request: RedriveRequest, namespace: TopicNamespace) throws(DeadLetterError) {
        topic = log.topic
        if request.selection.isEmpty, !request.all { throw .nothingSelected }
        let unknown = log.unknownIDs(in: request.selection)
        if !unknown.isEmpty { throw .unknownIDs(unknown, deadLetterTopic: Topics.deadLetter(of: log.topic)) }

        // The latest dead letter of each id: earlier ones are failures of copies redriven since.
        var latest: [DeadLetterID: DeadLetterLog.Entry] = [:]
        var order: [DeadLetterID] = []
        for entry in log.entries(matching: request.selection) {
            if latest[entry.letter.id] == nil { order.append(entry.letter.id) }
            latest[entry.letter.id] = entry
        }
        if request.replacementValue != nil, order.count != 1 { throw .fixNeedsOneRecord(selected: order.count) }

        copies = []
        refusals = []
        for id in order {
            guard let entry = latest[id] else { continue }
            if entry.isRedriven, !request.force, let last = entry.redrives.last {
                refusals.append(Refusal(id: id, reason: "already redriven (copy at \(last.copy)\(last.timestamp.map { " on \($0)" } ?? "")); --force sends another copy"))
                continue
            }
            // Workers honour a redrive's coordinates on an external topic only when they name that topic.
            if !KafkaRecords.inboxes.contains(log.topic), id.origin.topic != log.topic || id.index != nil {
                refusals.append(Refusal(id: id, reason: "its identity is not on \(log.topic), so the workers would not keep it"))
                continue
            }
            if request.replacementValue == nil, let unavailable = entry.letter.originalUnavailable {
                refusals.append(Refusal(id: id, reason: unavailable))
                continue
            }
            if request.replacementValue == nil, entry.letter.reference != nil, entry.letter.value.flatMap(DeadLetterReference.decode) != nil {
                refusals.append(Refusal(id: id, reason: "its value was too large to carry and its original was not fetched (DeadLetterTool.resolvingReferences)"))
                continue
            }
            let value = request.replacementValue ?? entry.letter.value
            let key: [UInt8]?
            do {
                key = try Self.validatedKey(
                    value: value, letter: entry.letter, topic: log.topic, isFix: request.replacementValue != nil, limits: request.limits)
            } catch {
                if request.replacementValue != nil { throw .invalidFix(id: id, error: error.message) }
                refusals.append(Refusal(id: id, reason: "would be dead-lettered again: \(error.message) (fix the data with --value-file)"))
                continue
            }
            let record = ProducerRecord(
                topic: namespace.physical(log.topic), key: key, value: value,
                headers: KafkaRecords.redriveHeaders(origin: id.origin, index: id.index, redrivenFrom: entry.letter.position.description),
                timestamp: entry.letter.timestamp?.millisecondsSinceEpoch)
            copies.append(Copy(letter: entry.letter, record: record, isFixed: request.replacementValue != nil))
        }
    }

    /// The key to send, after checking the record as the worker will (`KafkaRecords.decode`):
    /// the dead letter's key, or for a data fix the fixed record's user (records are keyed by
    /// user, so a fixed `user_id` moves the record to that user's partition).
    private static func validatedKey(
        value: [UInt8]?, letter: DeadLetter, topic: String, isFix: Bool, limits: RecordLimits
    ) throws(RecordError) -> [UInt8]? {
        var key = letter.key
        if isFix, let value {
            let record = try RecordCodec.decode(value, topic: topic)
            if case .tick = record { key = nil } else { key = Array(record.userId.utf8) }
        }
        let message = KafkaMessage(topic: topic, partition: 0, offset: 0, key: key, value: value, timestamp: nil, timestampType: nil)
        _ = try KafkaRecords.decode(message, limits: limits)
        return key
    }
}

/// Why a DLQ command cannot do what was asked; each message says what to do instead.
public enum DeadLetterError: Error, CustomStringConvertible, Sendable, Equatable {
    case notADeadLetterTopic(String, known: [String])
    case nothingSelected
    case unknownIDs([DeadLetterID], deadLetterTopic: String)
    case fixNeedsOneRecord(selected: Int)
    case invalidFix(id: DeadLetterID, error: String)
    case markerNotWritten(id: DeadLetterID, copy: SourceCoordinates, error: String)

    public var description: String {
        switch self {
        case .notADeadLetterTopic(let topic, let known):
            "\(topic) has no dead-letter topic; --topic is one of: \(known.joined(separator: ", "))"
        case .nothingSelected:
            "say which dead letters to redrive: --id (repeatable), --since/--until, or --all"
        case .unknownIDs(let ids, let dlq):
            "no dead letter in \(dlq) has id \(ids.map(\.description).joined(separator: ", ")) (see `fleetctl dlq list`)"
        case .fixNeedsOneRecord(let selected):
            "--value-file replaces the value of exactly one dead letter; the selection has \(selected)"
        case .invalidFix(let id, let error):
            "the fixed value for \(id) is not valid, nothing was sent: \(error)"
        case .markerNotWritten(let id, let copy, let error):
            "\(id) was redriven (copy at \(copy)) but recording the redrive failed: \(error); do not redrive it again"
        }
    }
}
