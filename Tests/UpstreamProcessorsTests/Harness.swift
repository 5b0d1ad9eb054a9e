import FleetModel
import UpstreamProcessors

/// Drives one processor for one user the way the runtime does: each record at its log time and
/// offset, due timers fired in time order (with `now` = the wake-up time) before any later
/// record. Output ids are `topic:0:offset:index`; each timer firing takes the next offset, as
/// the tick record that made it due would.
struct Harness<P: UserProcessor> {
    let processor: P
    let userId: String
    let topic: String
    var state: P.State
    var nextOffset: Int64 = 0
    /// Every output so far, in order.
    var outputs: [OutputRecord] = []

    init(_ processor: P, userId: String = "u1", topic: String) {
        self.processor = processor
        self.userId = userId
        self.topic = topic
        self.state = processor.initialState(userId: userId)
    }

    /// Processes `record` at `time` (after firing timers due before it) and returns its outputs.
    /// A record the processor rejects leaves the state untouched, as the runtime's DLQ path does.
    @discardableResult
    mutating func process(_ record: FleetRecord, at time: Timestamp) throws(RecordError) -> [OutputRecord] {
        advance(to: time, inclusive: false)
        let offset = nextOffset
        nextOffset += 1
        var context = ProcessingContext(
            now: time, userId: userId, ids: OutputIDs(origin: SourceCoordinates(topic: topic, partition: 0, offset: offset)))
        var copy = state
        try processor.process(record, state: &copy, context: &context)
        state = copy
        outputs += context.outputs
        return context.outputs
    }

    /// Fires every timer due up to `time`, each at its own wake-up time; returns their outputs.
    @discardableResult
    mutating func advance(to time: Timestamp, inclusive: Bool = true) -> [OutputRecord] {
        var produced: [OutputRecord] = []
        while let wake = processor.nextWakeUp(state), inclusive ? wake <= time : wake < time {
            let offset = nextOffset
            nextOffset += 1
            var context = ProcessingContext(
                now: wake, userId: userId, ids: OutputIDs(origin: SourceCoordinates(topic: topic, partition: 0, offset: offset)))
            processor.fireTimers(state: &state, context: &context)
            produced += context.outputs
            if let again = processor.nextWakeUp(state), again <= wake {
                preconditionFailure("fireTimers left a timer due at \(again)")
            }
        }
        outputs += produced
        return produced
    }
}

func at(_ text: String) -> Timestamp {
    guard let t = Timestamp(rfc3339: text) else { preconditionFailure("bad time \(text)") }
    return t
}

func source(_ topic: String, _ offset: Int64) -> SourceCoordinates {
    SourceCoordinates(topic: topic, partition: 0, offset: offset)
}

/// The expected output records, written out literally.
enum Expect {
    static func intent(
        _ id: String, _ notification: String, _ category: String, _ data: JSONObject, expiresAt: Timestamp? = nil,
        source: SourceCoordinates, at time: Timestamp, user: String = "u1"
    ) -> OutputRecord {
        OutputRecord(
            topic: Topics.deliveryInbox, timestamp: time,
            record: .intent(Intent(
                id: id, userId: user, notification: notification, category: category, data: data, expiresAt: expiresAt,
                source: source)))
    }

    static func item(
        _ id: String, section: String, itemId: String, _ item: JSONObject, expiresAt: Timestamp? = nil, at time: Timestamp,
        user: String = "u1"
    ) -> OutputRecord {
        OutputRecord(
            topic: Topics.deliveryInbox, timestamp: time,
            record: .sectionItem(SectionItem(id: id, userId: user, section: section, itemId: itemId, item: item, expiresAt: expiresAt)))
    }

    static func event(_ id: String, _ event: String, _ properties: JSONObject, at time: Timestamp, user: String = "u1") -> OutputRecord {
        OutputRecord(
            topic: Topics.deliveryInbox, timestamp: time,
            record: .retentionEvent(RetentionEvent(id: id, userId: user, event: event, properties: properties)))
    }

    static func valueEvent(_ id: String, _ type: String, at time: Timestamp, user: String = "u1") -> OutputRecord {
        event(id, "retention.value_event_delivered", ["event_type": .string(type)], at: time, user: user)
    }

    static func churnSignal(_ id: String, _ type: String, at time: Timestamp, user: String = "u1") -> OutputRecord {
        event(id, "retention.churn_signal_detected", ["signal_type": .string(type)], at: time, user: user)
    }
}

extension OutputRecord {
    var intent: Intent? { if case .intent(let i) = record { i } else { nil } }
    var sectionItem: SectionItem? { if case .sectionItem(let s) = record { s } else { nil } }
    var retentionEvent: RetentionEvent? { if case .retentionEvent(let e) = record { e } else { nil } }
}
