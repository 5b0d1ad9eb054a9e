public import FleetModel
public import Kafka

/// The dead-letter topic of one source topic as read at one moment: its dead letters, each with
/// the redrives recorded for it, in the order the worker wrote them.
public struct DeadLetterLog: Sendable {
    /// A dead letter and what has been done about it.
    public struct Entry: Hashable, Sendable {
        public var letter: DeadLetter
        /// Redrives of this dead letter, oldest first (several only with `--force`).
        public var redrives: [RedriveMarker]

        public var isRedriven: Bool { !redrives.isEmpty }
    }

    /// The source topic (logical); the dead letters are on `Topics.deadLetter(of: topic)`.
    public let topic: String
    public internal(set) var entries: [Entry]
    /// Records of the DLQ topic that are neither dead letters nor redrive markers (written by
    /// something else); counted so that the tool can say it skipped them.
    public let unreadable: Int

    /// Sorts `messages` of the DLQ topic into dead letters and markers; `unreadable` counts
    /// records a streaming read already dropped as neither.
    public init(topic: String, messages: [KafkaMessage], unreadable dropped: Int = 0) {
        self.topic = topic
        var letters: [DeadLetter] = []
        var markers: [SourceCoordinates: [RedriveMarker]] = [:]
        var unreadable = dropped
        for message in messages.sorted(by: { ($0.partition, $0.offset) < ($1.partition, $1.offset) }) {
            if let marker = RedriveMarker(message) {
                markers[marker.deadLetter, default: []].append(marker)
            } else if let letter = DeadLetter(message) {
                letters.append(letter)
            } else {
                unreadable += 1
            }
        }
        entries = letters.map { Entry(letter: $0, redrives: markers[$0.position] ?? []) }
        self.unreadable = unreadable
    }

    /// The entries `selection` names, in log order.
    public func entries(matching selection: DeadLetterSelection) -> [Entry] {
        entries.filter { selection.matches($0.letter) }
    }

    /// The ids of `selection` that name no dead letter here.
    public func unknownIDs(in selection: DeadLetterSelection) -> [DeadLetterID] {
        let present = Set(entries.map(\.letter.id))
        return selection.ids.filter { !present.contains($0) }
    }
}

/// Which dead letters an operator means: by id, by when they were dead-lettered, by the failed
/// record's own time, or any of these together (all must hold). Empty means every dead letter.
public struct DeadLetterSelection: Hashable, Sendable {
    public var ids: [DeadLetterID]
    /// Inclusive bounds on when the dead letter was written (`DeadLetter.deadLetteredAt`). A
    /// dead letter that does not say (its topic is not `LogAppendTime`) is judged by the failed
    /// record's own time instead: see `judgedByRecordTime`.
    public var since: Timestamp?
    public var until: Timestamp?
    /// Inclusive bounds on the failed record's own timestamp (`DeadLetter.timestamp`).
    public var recordSince: Timestamp?
    public var recordUntil: Timestamp?

    public init(
        ids: [DeadLetterID] = [], since: Timestamp? = nil, until: Timestamp? = nil,
        recordSince: Timestamp? = nil, recordUntil: Timestamp? = nil
    ) {
        self.ids = ids
        self.since = since
        self.until = until
        self.recordSince = recordSince
        self.recordUntil = recordUntil
    }

    public var isEmpty: Bool { ids.isEmpty && since == nil && until == nil && recordSince == nil && recordUntil == nil }

    public func matches(_ letter: DeadLetter) -> Bool {
        if !ids.isEmpty, !ids.contains(letter.id) { return false }
        if since != nil || until != nil {
            guard Self.within(letter.deadLetteredAt ?? letter.timestamp, since, until) else { return false }
        }
        if recordSince != nil || recordUntil != nil {
            guard Self.within(letter.timestamp, recordSince, recordUntil) else { return false }
        }
        return true
    }

    /// Whether `letter`'s dead-letter time bounds were checked against the failed record's own
    /// time, for want of a dead-letter time: the tool says so, since the two can be far apart
    /// (a redriven copy of an old record, a client that sends late).
    public func judgedByRecordTime(_ letter: DeadLetter) -> Bool {
        (since != nil || until != nil) && letter.deadLetteredAt == nil
    }

    private static func within(_ time: Timestamp?, _ since: Timestamp?, _ until: Timestamp?) -> Bool {
        guard let time else { return false }
        if let since, time < since { return false }
        if let until, time > until { return false }
        return true
    }
}
