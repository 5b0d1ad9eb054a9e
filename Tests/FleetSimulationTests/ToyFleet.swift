import FleetModel
import FleetSimulation

// A miniature fleet with the real topology (score → delivery inbox, reminders through the
// reminder inbox, activity through the delivery inbox) and made-up rules, so the simulator's
// routing, timing and dead-lettering can be checked without the real workers.

/// Score batches: every score becomes a `score.updated` intent. Score 13 is refused by the
/// processor; score 99 produces an intent the toy delivery engine refuses.
struct ToyScore: UserProcessor {
    struct State: Codable, Hashable, Sendable { var last: Int? }

    func initialState(userId: String) -> State { State() }

    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        guard case .scoreComputed(let score) = record else { return }
        if score.score == 13 { throw RecordError("score 13 is unlucky") }
        state.last = score.score
        let id = context.nextID()
        context.emit(.intent(Intent(
            id: id, userId: context.userId, notification: score.score == 99 ? "bogus" : "score.updated",
            category: "score", data: ["new": .int(Int64(score.score))], source: context.ids.origin)),
            to: Topics.deliveryInbox)
    }

    func fireTimers(state: inout State, context: inout ProcessingContext) {}
    func nextWakeUp(_ state: State) -> Timestamp? { nil }
}

/// Follow-up reminders: fires at the local time asked for and sends a `reminder.followup` intent.
struct ToyReminders: UserProcessor {
    struct Scheduled: Codable, Hashable, Sendable {
        var reminderId: String
        var due: Timestamp
        var contactName: String
    }
    struct State: Codable, Hashable, Sendable { var scheduled: [Scheduled] = [] }

    func initialState(userId: String) -> State { State() }

    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .reminderUpserted(let reminder):
            guard let local = reminder.fireAtLocal else { throw RecordError("toy reminders need 'fire_at_local'") }
            state.scheduled.removeAll { $0.reminderId == reminder.reminderId }
            state.scheduled.append(Scheduled(
                reminderId: reminder.reminderId, due: reminder.timeZone.instant(for: local), contactName: reminder.contactName))
            state.scheduled.sort { ($0.due, $0.reminderId) < ($1.due, $1.reminderId) }
        case .reminderCancelled(let cancel):
            state.scheduled.removeAll { $0.reminderId == cancel.reminderId }
        default:
            return
        }
    }

    func fireTimers(state: inout State, context: inout ProcessingContext) {
        while let first = state.scheduled.first, first.due <= context.now {
            state.scheduled.removeFirst()
            let id = context.nextID()
            context.emit(.intent(Intent(
                id: id, userId: context.userId, notification: "reminder.followup", category: "reminders",
                data: ["reminder_id": .string(first.reminderId), "contact_name": .string(first.contactName)],
                source: context.ids.origin)), to: Topics.deliveryInbox)
        }
    }

    func nextWakeUp(_ state: State) -> Timestamp? { state.scheduled.first?.due }
}

/// Delivery: two deliveries per local day, the rest suppressed for `budget`; an intent whose
/// data has `hold_minutes` is deferred that long first; notification `bogus` is refused.
struct ToyDelivery: UserProcessor {
    struct Held: Codable, Hashable, Sendable {
        var intent: Intent
        var until: Timestamp
    }
    struct State: Codable, Hashable, Sendable {
        var zone: Zone?
        var deliveredByDay: [String: Int] = [:]
        var held: [Held] = []
    }

    func initialState(userId: String) -> State { State() }

    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .userSignedUp(let signup):
            state.zone = signup.timeZone
        case .settingsChanged(let settings):
            if let zone = settings.timeZone { state.zone = zone }
        case .intent(let intent):
            if intent.notification == "bogus" { throw RecordError("unknown notification 'bogus'") }
            if let minutes = intent.data["hold_minutes"]?.intValue {
                let until = context.now + .minutes(minutes)
                state.held.append(Held(intent: intent, until: until))
                state.held.sort { ($0.until, $0.intent.id) < ($1.until, $1.intent.id) }
                decide(intent, .deferred, reason: "hold", until: until, state: &state, context: &context)
            } else {
                decideFinally(intent, state: &state, context: &context)
            }
        default:
            return
        }
    }

    func fireTimers(state: inout State, context: inout ProcessingContext) {
        while let first = state.held.first, first.until <= context.now {
            state.held.removeFirst()
            decideFinally(first.intent, state: &state, context: &context)
        }
    }

    func nextWakeUp(_ state: State) -> Timestamp? { state.held.first?.until }

    private func decideFinally(_ intent: Intent, state: inout State, context: inout ProcessingContext) {
        let day = (state.zone ?? .utc).localDate(at: context.now).description
        if state.deliveredByDay[day, default: 0] >= 2 {
            decide(intent, .suppressed, reason: "budget", state: &state, context: &context)
            return
        }
        state.deliveredByDay[day, default: 0] += 1
        let notificationId = context.nextID()
        context.emit(.delivery(Delivery(
            id: notificationId, userId: context.userId, notificationId: notificationId, channel: .push,
            notification: intent.notification, category: intent.category, title: intent.notification, body: "",
            deepLink: "rin://home", mergedIntents: [intent.id])), to: Topics.deliveries)
        decide(intent, .delivered, notificationId: notificationId, state: &state, context: &context)
    }

    private func decide(
        _ intent: Intent, _ outcome: DecisionOutcome, reason: String? = nil, notificationId: String? = nil,
        until: Timestamp? = nil, state: inout State, context: inout ProcessingContext
    ) {
        let id = context.nextID()
        context.emit(.decision(Decision(
            id: id, userId: context.userId, intentId: intent.id, outcome: outcome, reason: reason,
            notificationId: notificationId, until: until, rule: "P-TOY-1")), to: Topics.decisions)
    }
}

/// The toy fleet in the production order, through `FleetStages` like the real one.
func toyFleet() throws -> Simulator {
    try Simulator(stages: FleetStages.stages(
        score: ToyScore(), sync: CounterProcessor(), reminder: ToyReminders(), access: CounterProcessor(),
        delivery: ToyDelivery(), deliveryZone: { $0.zone }))
}

// MARK: - Input lines

enum Lines {
    static func score(_ at: String, _ user: String, _ score: Int, id: String) -> String {
        #"{"at":"\#(at)","topic":"rin.score.batches","key":"\#(user)","value":{"v":1,"type":"score.computed","id":"\#(id)","user_id":"\#(user)","batch_id":"b-\#(id)","computed_at":"\#(at)","score":\#(score),"components":{"quality":50,"position":50,"stability":50,"trust":50}}}"#
    }

    static func signup(_ at: String, _ user: String, zone: String, id: String) -> String {
        #"{"at":"\#(at)","topic":"rin.app.activity","key":"\#(user)","value":{"v":1,"type":"user.signed_up","id":"\#(id)","user_id":"\#(user)","time_zone":"\#(zone)"}}"#
    }

    static func reminder(_ at: String, _ user: String, reminder: String, local: String, zone: String, id: String) -> String {
        #"{"at":"\#(at)","topic":"rin.reminders","key":"\#(user)","value":{"v":1,"type":"reminder.upserted","id":"\#(id)","user_id":"\#(user)","reminder_id":"\#(reminder)","kind":"followup","contact_id":"c1","contact_name":"Ana","time_zone":"\#(zone)","fire_at_local":"\#(local)","recurrence":"none"}}"#
    }

    static func cancel(_ at: String, _ user: String, reminder: String, id: String) -> String {
        #"{"at":"\#(at)","topic":"rin.reminders","key":"\#(user)","value":{"v":1,"type":"reminder.cancelled","id":"\#(id)","user_id":"\#(user)","reminder_id":"\#(reminder)"}}"#
    }

    static func intent(_ at: String, _ user: String, holdMinutes: Int?, id: String) -> String {
        let data = holdMinutes.map { #"{"hold_minutes":\#($0)}"# } ?? "{}"
        return #"{"at":"\#(at)","topic":"rin.delivery.inbox","key":"\#(user)","value":{"v":1,"type":"intent","id":"\#(id)","user_id":"\#(user)","notification":"premium.who_viewed","category":"premium","data":\#(data),"source":{"topic":"test","partition":0,"offset":0}}}"#
    }

    static func tick(_ at: String, id: String) -> String {
        #"{"at":"\#(at)","topic":"rin.delivery.inbox","value":{"v":1,"type":"tick","id":"\#(id)"}}"#
    }
}
