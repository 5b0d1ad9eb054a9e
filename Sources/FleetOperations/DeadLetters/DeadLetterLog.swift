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

/// Which dead letters an operator means: by id, by time, or both (all must hold). Empty means
/// every dead letter.
public struct DeadLetterSelection: Hashable, Sendable {
    public var ids: [DeadLetterID]
    /// Inclusive bounds on the failed record's timestamp (which the dead letter keeps).
    public var since: Timestamp?
    public var until: Timestamp?

    public init(ids: [DeadLetterID] = [], since: Timestamp? = nil, until: Timestamp? = nil) {
        self.ids = ids
        self.since = since
        self.until = until
    }

    public var isEmpty: Bool { ids.isEmpty && since == nil && until == nil }

    public func matches(_ letter: DeadLetter) -> Bool {
        if !ids.isEmpty, !ids.contains(letter.id) { return false }
        if since != nil || until != nil {
            guard let time = letter.timestamp else { return false }
            if let since, time < since { return false }
            if let until, time > until { return false }
        }
        return true
    }
}
