import FleetModel

/// A small processor with per-user state, outputs and timers, for replay's pure tests: every
/// `user.action` counts; `alarm` sets a timer 90 s later that emits an event when it fires;
/// `reject` is refused (a dead letter). A firing alarm also emits a `reminded` event whose id is
/// its own (`<user>~alarm~<count>`, like the sender's attempt ids derived from the delivery id,
/// `OutputRecord.hasOwnId`), in whichever user's step the alarm comes due.
struct CounterProcessor: UserProcessor {
    struct State: Codable, Hashable, Sendable {
        var count = 0
        var wake: Timestamp?
        /// The id of the last event emitted for the user: ids run across the users a step
        /// fires, so a user's state depends on which other users fired before it.
        var lastEvent: String?
    }

    func initialState(userId: String) -> State { State() }

    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        guard case .userAction(let action) = record else { throw RecordError("counter counts user.action only") }
        if action.action == "reject" { throw RecordError("rejected on purpose") }
        state.count += 1
        state.lastEvent = emit("seen", count: state.count, context: &context)
        if action.action == "alarm" { state.wake = context.now + .seconds(90) }
    }

    func fireTimers(state: inout State, context: inout ProcessingContext) {
        guard let wake = state.wake, wake <= context.now else { return }
        state.wake = nil
        state.lastEvent = emit("alarm", count: state.count, context: &context)
        let reminded = RetentionEvent(
            id: "\(context.userId)~alarm~\(state.count)", userId: context.userId, event: "reminded",
            properties: ["count": .int(Int64(state.count))])
        context.emit(.retentionEvent(reminded), to: Topics.retentionEvents, hasOwnId: true)
    }

    func nextWakeUp(_ state: State) -> Timestamp? { state.wake }

    private func emit(_ event: String, count: Int, context: inout ProcessingContext) -> String {
        let record = RetentionEvent(id: context.nextID(), userId: context.userId, event: event, properties: ["count": .int(Int64(count))])
        context.emit(.retentionEvent(record), to: Topics.retentionEvents)
        return record.id
    }
}
