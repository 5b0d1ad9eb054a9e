public import FleetModel

/// The delivery worker's first policy: SECURITY is delivered at once, every other category
/// obeys a plain cap per user and UTC day, and every intent gets one decision.
///
/// It exists so the Kafka path (inbox → delivery worker → deliveries and decisions) works end to
/// end before the full engine of POLICY.md is hosted by the stateful runtime; it plugs in through
/// the same `UserProcessor` seam the `DeliveryEngine` uses, so swapping it is a one-line change in
/// the executable.
public struct DailyCapPolicy: UserProcessor {
    public struct State: Codable, Hashable, Sendable {
        /// The UTC day (days since the epoch) the count belongs to.
        public var day: Int64 = 0
        public var deliveredToday: Int = 0
        /// Intent ids already decided, so a redelivered intent is not decided twice (P-IDEM-1).
        /// Bounded: only the current day's ids are kept, which covers redelivery after a crash
        /// (the uncommitted tail is seconds to minutes long).
        public var decidedToday: Set<String> = []
    }

    public var dailyCap: Int

    public init(dailyCap: Int = 3) { self.dailyCap = dailyCap }

    public func initialState(userId: String) -> State { State() }

    public func nextWakeUp(_ state: State) -> Timestamp? { nil }

    public func fireTimers(state: inout State, context: inout ProcessingContext) {}

    public func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError) {
        guard case .intent(let intent) = record else { return }
        guard let copy = FirstCutCopy(intent: intent) else {
            throw RecordError("unknown notification type '\(intent.notification)'")
        }
        let day = context.now.secondsSinceEpoch / 86_400
        if day != state.day {
            state = State(day: day)
        }
        guard state.decidedToday.insert(intent.id).inserted else { return }

        let isSecurity = intent.category == "SECURITY"
        if !isSecurity && state.deliveredToday >= dailyCap {
            context.emit(.decision(Decision(
                id: context.nextID(), userId: intent.userId, intentId: intent.id, outcome: .suppressed,
                reason: "daily_budget_exhausted", rule: "P-BUD-1")), to: Topics.decisions)
            return
        }
        if !isSecurity { state.deliveredToday += 1 }
        let notificationId = context.nextID()
        context.emit(.delivery(Delivery(
            id: notificationId, userId: intent.userId, notificationId: notificationId, channel: .push,
            notification: intent.notification, category: intent.category, title: copy.title, body: copy.body,
            deepLink: copy.deepLink, mergedIntents: [intent.id])), to: Topics.deliveries)
        context.emit(.decision(Decision(
            id: context.nextID(), userId: intent.userId, intentId: intent.id, outcome: .delivered,
            reason: isSecurity ? "security_immediate" : "within_daily_budget", notificationId: notificationId,
            rule: "P-BUD-1")), to: Topics.decisions)
    }
}

/// Copy for the first-cut policy: the POLICY.md sentences for the types whose data is simple.
struct FirstCutCopy {
    var title: String
    var body: String
    var deepLink: String

    init?(intent: Intent) {
        let d = intent.data
        func s(_ k: String) -> String { d[k]?.stringValue ?? "" }
        func i(_ k: String) -> Int64 { d[k]?.intValue ?? 0 }
        switch intent.notification {
        case "security.access_request":
            self.init(title: "Access request", body: "\(s("requester_name")) asked to see your \(s("field")).", deepLink: "rin://security/inbox")
        case "security.new_signin", "security.suspicious_activity":
            self.init(title: "Security", body: s("detail"), deepLink: "rin://security/inbox")
        case "score.updated":
            if let old = d["old"]?.intValue {
                let delta = i("new") - old
                let verb = delta >= 0 ? "Tap to see what improved." : "Tap to see what shifted."
                self.init(title: "Rin Score", body: "Your Rin Score changed: \(old) to \(i("new")) (\(delta >= 0 ? "+" : "")\(delta)). \(verb)", deepLink: "rin://score")
            } else {
                self.init(title: "Rin Score", body: "Your Rin Score is ready: \(i("new")).", deepLink: "rin://score")
            }
        case "score.milestone":
            self.init(title: "Rin Score", body: "Your Rin Score reached \(s("label")) (\(i("threshold"))). Your network is growing stronger.", deepLink: "rin://score")
        case "contacts.dedup_ready":
            let n = i("count")
            self.init(title: "Contacts", body: "\(n) possible duplicate\(n == 1 ? "" : "s") found. Review and clean your contacts.", deepLink: "rin://contacts/dedup")
        case "contacts.sync_conflict":
            let n = i("count")
            self.init(title: "Contacts", body: "\(n) contact\(n == 1 ? "" : "s") changed on your phone and in Rin. Review the differences.", deepLink: "rin://contacts/dedup")
        case "contacts.enrichment":
            let names = d["names"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let first = names.first ?? "A contact"
            let body = names.count <= 1
                ? "\(first) updated their profile. New info available."
                : "\(first) and \(names.count - 1) other\(names.count == 2 ? "" : "s") updated their profiles. New info available."
            self.init(title: "Contacts", body: body, deepLink: "rin://home")
        case "reminder.birthday":
            self.init(title: "Birthday", body: "\(s("contact_name"))'s birthday is today.", deepLink: "rin://reminders/\(s("reminder_id"))")
        case "reminder.followup":
            self.init(title: "Follow-up", body: "Follow up with \(s("contact_name")): \(s("note"))", deepLink: "rin://reminders/\(s("reminder_id"))")
        case "premium.who_viewed":
            self.init(title: "Premium", body: "\(i("count")) people viewed your profile.", deepLink: "rin://home")
        default:
            return nil
        }
    }

    init(title: String, body: String, deepLink: String) {
        self.title = title; self.body = body; self.deepLink = deepLink
    }
}
