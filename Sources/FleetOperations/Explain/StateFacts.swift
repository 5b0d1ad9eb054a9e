public import DeliveryPolicy
import FleetModel

/// One line of what the delivery worker knew about a user, in an on-call engineer's words
/// ("budget 2/3 used on 2026-11-20 (Europe/Berlin)"), under a stable `key` so two states can be
/// compared line by line.
public struct StateFact: Hashable, Sendable {
    /// `time_zone`, `quiet_hours`, `push`, `permission`, `premium`, `email`, `disabled_categories`,
    /// `last_open`, `last_action`, `budget`, `quiet_mode`, `cooldown:<category>`,
    /// `pending:<notification id>`.
    public var key: String
    public var text: String
}

/// A state line that a step changed: `before` nil for a new line, `after` nil for one that ended.
public struct StateFactChange: Hashable, Sendable {
    public var key: String
    public var before: String?
    public var after: String?

    /// The change as one line: the new text, or what ended.
    public var text: String {
        if let after { return after }
        if key.hasPrefix(StateFacts.pendingPrefix) { return "released: \(before ?? key)" }
        return "no longer: \(before ?? key)"
    }
}

/// Turns delivery states into `StateFact` lines and compares them.
///
/// Only what explains decisions is described: settings, the day's budget, quiet mode,
/// cool-downs and pending notifications; bookkeeping (idempotency memory, hashes of recent copy)
/// is left out.
public struct StateFacts: Sendable {
    public static let pendingPrefix = "pending:"
    public static let cooldownPrefix = "cooldown:"

    public let profile: PolicyProfile

    public init(profile: PolicyProfile) { self.profile = profile }

    /// The lines of `state`; `nil` is a user never seen (the engine's initial state).
    public func facts(_ state: DeliveryStateView?) -> [StateFact] {
        let view = state ?? DeliveryState().view
        let zone = view.timeZone ?? .utc
        var facts: [StateFact] = []
        func add(_ key: String, _ text: String) { facts.append(StateFact(key: key, text: text)) }

        // No zone: the user never gave one, and P-TIME-1's default applies. States written
        // before the engine kept a chosen UTC as given say the same for a user who chose UTC.
        add("time_zone", view.timeZone.map { "time zone \($0.identifier)" } ?? "time zone not set (UTC, the default)")
        if let own = view.quietHours {
            add("quiet_hours", "quiet hours \(own.start)–\(own.end) \(zone.identifier) (user setting)")
        } else {
            add("quiet_hours", "quiet hours \(profile.quietHours.start)–\(profile.quietHours.end) \(zone.identifier) (profile default)")
        }
        add("push", view.pushEnabled ? "push on" : "push turned off by the user")
        add("permission", view.notificationsDenied ? "notification permission denied" : "notification permission not denied")
        add("premium", view.premium ? "premium" : "not premium")
        add("email", view.emailOptIn ? "email opted in" : "email not opted in")
        add("disabled_categories", view.disabledCategories.isEmpty
            ? "no category turned off" : "categories turned off: \(view.disabledCategories.joined(separator: ", "))")
        if let open = view.lastOpenAt { add("last_open", "last opened the app \(Self.time(open, zone))") }
        if let action = view.lastActionAt { add("last_action", "last intentional action \(Self.time(action, zone))") }
        if let ledger = view.ledger {
            let types = ledger.deliveredByType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            add("budget", "budget \(ledger.delivered)/\(profile.budget.dailyLimit) used on \(ledger.date) (\(zone.identifier))"
                + "; \(ledger.candidates) intent\(ledger.candidates == 1 ? "" : "s") that day, digest above \(profile.digest.whenCandidatesExceed)"
                + (types.isEmpty ? "" : "; delivered: " + types.joined(separator: ", ")))
        }
        if let since = view.quietModeSince { add("quiet_mode", "in quiet mode since \(Self.time(since, zone)) (P-LAP-3)") }
        for (category, until) in view.cooldownUntil.sorted(by: { $0.key < $1.key }) {
            add(Self.cooldownPrefix + category, "\(category) cool-down until \(Self.time(until, zone)) (P-COOL-1)")
        }
        for pending in view.pending {
            add(Self.pendingPrefix + pending.notificationId, Self.describe(pending, zone: zone))
        }
        return facts
    }

    /// The lines that differ between `before` and `after`, in `after`'s order, then the ended ones.
    public func changes(from before: DeliveryStateView?, to after: DeliveryStateView) -> [StateFactChange] {
        let old = facts(before)
        let new = facts(after)
        let oldByKey = Dictionary(old.map { ($0.key, $0.text) }, uniquingKeysWith: { first, _ in first })
        let newKeys = Set(new.map(\.key))
        var changes: [StateFactChange] = []
        for fact in new where oldByKey[fact.key] != fact.text {
            changes.append(StateFactChange(key: fact.key, before: oldByKey[fact.key], after: fact.text))
        }
        for fact in old where !newKeys.contains(fact.key) {
            changes.append(StateFactChange(key: fact.key, before: fact.text, after: nil))
        }
        return changes
    }

    /// The lines a decision under `rule` depends on, e.g. the budget for P-BUD-1 or the quiet
    /// hours for P-DND-1; empty for rules that read no state line (P-DUP-1, P-EXP-1).
    public func relevant(to rule: String, category: String?, in state: DeliveryStateView?) -> [StateFact] {
        let keys: Set<String>
        switch rule {
        case "P-BUD-1", "P-BUD-3", "P-BUD-5", "P-BUD-6": keys = ["budget"]
        case "P-DND-1": keys = ["quiet_hours", "time_zone"]
        case "P-LAP-3": keys = ["quiet_mode", "last_open"]
        case "P-LAP-5": keys = ["last_open"]
        case "P-PREF-1": keys = ["push", "permission", "premium", "disabled_categories"]
        case "P-COOL-1": keys = [Self.cooldownPrefix + (category ?? "")]
        default: keys = []
        }
        return facts(state).filter { keys.contains($0.key) }
    }

    private static func describe(_ pending: DeliveryStateView.Pending, zone: Zone) -> String {
        let what = pending.kind == "intents"
            ? "\(pending.category) notification \(pending.notificationId) holding \(pending.intentIds.joined(separator: ", "))"
            : "\(pending.kind.replacingOccurrences(of: "_", with: " ")) \(pending.notificationId)"
        switch pending.phase {
        case "collecting":
            return "pending \(what): coalescing until \(time(pending.dueAt, zone)) (P-COAL-1)"
        case "deferred":
            return "pending \(what): deferred until \(time(pending.until ?? pending.dueAt, zone)) (P-DND-1)"
        default:
            return "pending \(what): scheduled for \(time(pending.dueAt, zone))"
        }
    }

    /// `2026-11-22T06:00:00Z (07:00 Europe/Berlin)`: the instant as stored, and the user's wall clock.
    static func time(_ instant: Timestamp, _ zone: Zone) -> String {
        "\(instant.rfc3339) (\(zone.localDateTime(at: instant).time) \(zone.identifier))"
    }
}
