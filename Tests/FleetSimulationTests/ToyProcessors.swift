import FleetModel

// Small processors that exercise the fold and the simulator without the real workers. Each
// command is a `user.action` whose `action` says what to do.

let toyOutputTopic = "toy.out"

/// Counts the records of each user and emits one event per record. `reject` is refused.
struct CounterProcessor: UserProcessor {
    struct State: Codable, Hashable, Sendable { var count = 0 }

    func initialState(userId: String) -> State { State() }

    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        if case .userAction(let action) = record, action.action == "reject" {
            state.count += 1000  // a careless processor: the fold must still discard this
            throw RecordError("the counter refuses 'reject'")
        }
        state.count += 1
        let id = context.nextID()
        context.emit(.retentionEvent(RetentionEvent(
            id: id, userId: context.userId, event: "counted", properties: ["count": .int(Int64(state.count))])), to: toyOutputTopic)
    }

    func fireTimers(state: inout State, context: inout ProcessingContext) {}
    func nextWakeUp(_ state: State) -> Timestamp? { nil }
}

/// Keeps a sorted list of alarms per user. `in:<seconds>` sets an alarm that many seconds after
/// the record's time; `clear` drops every alarm; `reject` mutates the state and then throws. A
/// fired alarm emits an event naming its due time; `repeat:<seconds>` alarms re-arm themselves.
struct AlarmProcessor: UserProcessor {
    struct Alarm: Codable, Hashable, Sendable, Comparable {
        var due: Timestamp
        var every: Int64?
        static func < (a: Alarm, b: Alarm) -> Bool { a.due < b.due }
    }
    struct State: Codable, Hashable, Sendable {
        var alarms: [Alarm] = []
        var fired = 0
        /// How often the fold called `fireTimers`: once per distinct due time, never for a
        /// stale heap entry.
        var wakeCalls = 0
    }

    func initialState(userId: String) -> State { State() }

    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        guard case .userAction(let action) = record else { return }
        let parts = action.action.split(separator: ":")
        switch parts.first {
        case "reject":
            state.alarms.removeAll()
            state.fired = -1
            throw RecordError("alarm command 'reject' refused")
        case "clear":
            state.alarms.removeAll()
            return
        case "in":
            guard parts.count == 2, let seconds = Int64(parts[1]) else { throw RecordError("bad alarm command") }
            state.alarms.append(Alarm(due: context.now + .seconds(seconds), every: nil))
        case "repeat":
            guard parts.count == 2, let seconds = Int64(parts[1]), seconds > 0 else { throw RecordError("bad alarm command") }
            state.alarms.append(Alarm(due: context.now + .seconds(seconds), every: seconds))
        default:
            throw RecordError("unknown alarm command '\(action.action)'")
        }
        state.alarms.sort()
        let id = context.nextID()
        context.emit(.retentionEvent(RetentionEvent(
            id: id, userId: context.userId, event: "armed",
            properties: ["due": .string(state.alarms[0].due.rfc3339)])), to: toyOutputTopic)
    }

    func fireTimers(state: inout State, context: inout ProcessingContext) {
        state.wakeCalls += 1
        while let first = state.alarms.first, first.due <= context.now {
            state.alarms.removeFirst()
            state.fired += 1
            let id = context.nextID()
            context.emit(.retentionEvent(RetentionEvent(
                id: id, userId: context.userId, event: "rang", properties: ["due": .string(first.due.rfc3339)])),
                to: toyOutputTopic)
            if let every = first.every {
                state.alarms.append(Alarm(due: first.due + .seconds(every), every: every))
                state.alarms.sort()
            }
        }
    }

    func nextWakeUp(_ state: State) -> Timestamp? { state.alarms.first?.due }
}

/// Breaks the processor contract: its wake-up stays in the past after firing. The fold must not
/// spin on it.
struct StuckAlarmProcessor: UserProcessor {
    struct State: Codable, Hashable, Sendable {
        var seen = 0
        var fired = 0
    }
    let stuckAt: Timestamp

    func initialState(userId: String) -> State { State() }
    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        state.seen += 1
    }
    func fireTimers(state: inout State, context: inout ProcessingContext) { state.fired += 1 }
    func nextWakeUp(_ state: State) -> Timestamp? { state.seen > 0 ? stuckAt : nil }
}

// MARK: - Record helpers

let epoch = Timestamp(rfc3339: "2026-03-02T08:00:00Z")!

func at(_ seconds: Int64) -> Timestamp { epoch + .seconds(seconds) }

func action(_ user: String, _ command: String, id: String = "in-1") -> FleetRecord {
    .userAction(UserAction(id: id, userId: user, action: command))
}

func tick(_ id: String = "tick-1") -> FleetRecord { .tick(Tick(id: id)) }

func coordinates(_ offset: Int64, topic: String = "toy.in") -> SourceCoordinates {
    SourceCoordinates(topic: topic, partition: 0, offset: offset)
}

/// An output as one comparable line: time, topic and canonical bytes (which include the id).
func line(_ output: OutputRecord) -> String {
    "\(output.timestamp.rfc3339) \(output.topic) \(RecordCodec.encodeString(output.record))"
}

extension FleetRecord {
    /// The `event` and `properties` of a toy output.
    var toyEvent: (name: String, properties: JSONObject)? {
        if case .retentionEvent(let e) = self { return (e.event, e.properties) }
        return nil
    }
}
