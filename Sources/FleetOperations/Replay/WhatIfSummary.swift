import Foundation
public import FleetModel

/// "What if the policy were different": the outputs recorded (or simulated with the baseline
/// profile) against those of a replay with another profile, over the same log.
///
/// What is compared is what a user experiences, keyed so that it survives the change of profile
/// (output ids need not: they number a step's outputs, and a different decision shifts them):
/// - **Deliveries**, per intent: an intent is delivered when it is among the `merged_intents` of a
///   record on `rin.notify.deliveries` (alone, coalesced or in a digest). A delivery that carries
///   no intent (one the engine generates) is keyed by its `notification_id`.
/// - **Decisions**, per intent: its final decision (the last one that is not a deferral, else the
///   last deferral); a generated notification's decisions (`kind`) are keyed by its
///   `notification_id`, like its delivery.
/// - **Intents** an upstream worker emitted, by id (a what-if of an upstream worker).
///
/// A delivery lost is one recorded but not replayed, filed under the rule and reason of the
/// replayed decision that now holds it back (an intent merged or digested into a notification
/// that still goes out for another intent loses no delivery: that is an outcome change); a delivery gained is filed under the recorded
/// decision that held it back before. An outcome change is an intent delivered (or not) on both
/// sides whose final decision differs in outcome, reason or rule, filed under the replayed one.
public struct WhatIfSummary: Sendable {
    public enum Kind: String, Sendable, Hashable, Codable { case lost, gained, changed }

    /// One intent's (or generated notification's) final decision.
    public struct Verdict: Sendable, Hashable, Codable, CustomStringConvertible {
        public var outcome: String
        public var reason: String?
        public var rule: String

        public var description: String { "\(outcome) (\(reason ?? "-"), \(rule))" }
    }

    public struct Change: Sendable, Hashable, Codable {
        public var kind: Kind
        /// The intent id, or `notification:<id>` for a delivery that carries no intent.
        public var key: String
        public var userId: String
        public var notification: String
        public var recorded: Verdict?
        public var replayed: Verdict?

        enum CodingKeys: String, CodingKey { case kind, key, userId = "user_id", notification, recorded, replayed }
    }

    /// One line of the per-rule table.
    public struct Row: Sendable, Hashable, Codable {
        public var rule: String
        public var notification: String
        public var reason: String
        public var lost = 0
        public var gained = 0
        public var changed = 0

        public init(rule: String, notification: String, reason: String, lost: Int = 0, gained: Int = 0, changed: Int = 0) {
            self.rule = rule; self.notification = notification; self.reason = reason
            self.lost = lost; self.gained = gained; self.changed = changed
        }
    }

    public private(set) var changes: [Change] = []
    public private(set) var rows: [Row] = []

    public var lost: [Change] { changes.filter { $0.kind == .lost } }
    public var gained: [Change] { changes.filter { $0.kind == .gained } }

    /// - Parameters:
    ///   - recorded: the baseline's output records, in the order written.
    ///   - replayed: the candidate's output records, in the order produced.
    ///   - intentTypes: notification type by intent id, for intents whose delivery is not on
    ///     either side (the intents of the range).
    public init(recorded: [FleetRecord], replayed: [FleetRecord], intentTypes: [String: String] = [:]) {
        let old = Side(recorded)
        let new = Side(replayed)
        var types = intentTypes
        for side in [old, new] { types.merge(side.types) { current, _ in current } }

        var changes: [Change] = []
        func change(_ kind: Kind, _ key: String, verdictKey: String?) {
            let user = old.users[key] ?? new.users[key] ?? ""
            changes.append(Change(
                kind: kind, key: key, userId: user, notification: types[key] ?? "?",
                recorded: verdictKey.flatMap { old.verdicts[$0] }, replayed: verdictKey.flatMap { new.verdicts[$0] }))
        }
        // An intent that only rode along in a notification (merged into it, or digested) while
        // that notification still goes out for another intent cost the user no delivery: its
        // change of outcome is an outcome change, not a delivery lost or gained.
        func rodeAlong(_ key: String, on side: Side, stillSentOn other: Side) -> Bool {
            guard let outcome = side.verdicts[key]?.outcome,
                  outcome == DecisionOutcome.merged.rawValue || outcome == DecisionOutcome.digested.rawValue
            else { return false }
            return side.companions[key, default: []].contains { $0 != key && other.delivered.contains($0) }
        }
        for key in old.delivered.subtracting(new.delivered) {
            change(rodeAlong(key, on: old, stillSentOn: new) ? .changed : .lost, key, verdictKey: key)
        }
        for key in new.delivered.subtracting(old.delivered) {
            change(rodeAlong(key, on: new, stillSentOn: old) ? .changed : .gained, key, verdictKey: key)
        }
        for key in old.intents.subtracting(new.intents) { change(.lost, key, verdictKey: nil) }
        for key in new.intents.subtracting(old.intents) { change(.gained, key, verdictKey: nil) }
        for (key, verdict) in old.verdicts {
            guard let other = new.verdicts[key], other != verdict,
                  old.delivered.contains(key) == new.delivered.contains(key)
            else { continue }
            change(.changed, key, verdictKey: key)
        }
        self.changes = changes.sorted { ($0.kind.rawValue, $0.userId, $0.key) < ($1.kind.rawValue, $1.userId, $1.key) }

        var rows: [String: Row] = [:]
        for change in self.changes {
            // The decision that explains the change: the one now holding back a lost delivery,
            // the one that held back a gained one.
            let verdict = change.kind == .gained ? change.recorded : change.replayed
            let rule = verdict?.rule ?? "-"
            let reason = verdict.map { $0.reason ?? $0.outcome } ?? (old.intents.contains(change.key) || new.intents.contains(change.key) ? "intent" : "-")
            let id = "\(rule)\u{0}\(change.notification)\u{0}\(reason)"
            var row = rows[id] ?? Row(rule: rule, notification: change.notification, reason: reason)
            switch change.kind {
            case .lost: row.lost += 1
            case .gained: row.gained += 1
            case .changed: row.changed += 1
            }
            rows[id] = row
        }
        self.rows = rows.values.sorted { ($0.rule, $0.notification, $0.reason) < ($1.rule, $1.notification, $1.reason) }
    }

    /// The table (and with `details`, one line per change) that `fleetctl replay --profile` prints.
    public func render(details: Bool) -> String {
        let lostCount = changes.count { $0.kind == .lost }
        let gainedCount = changes.count { $0.kind == .gained }
        let changedCount = changes.count { $0.kind == .changed }
        var lines = ["deliveries lost: \(lostCount), gained: \(gainedCount), outcome changes: \(changedCount)"]
        if rows.isEmpty { return (lines + ["no difference"]).joined(separator: "\n") }
        lines.append("")
        var table = [["rule", "notification", "reason", "lost", "gained", "changed"]]
        table += rows.map { [$0.rule, $0.notification, $0.reason, String($0.lost), String($0.gained), String($0.changed)] }
        lines += TextTable.lines(table)
        if details {
            lines.append("")
            var list = [["change", "user", "intent", "notification", "recorded", "replayed"]]
            list += changes.map {
                [$0.kind.rawValue, $0.userId, $0.key, $0.notification, $0.recorded?.description ?? "-", $0.replayed?.description ?? "-"]
            }
            lines += TextTable.lines(list)
        }
        return lines.joined(separator: "\n")
    }

    /// The summary as one JSON object: `{"changes": [...], "rows": [...]}`, sorted keys.
    public func json() -> String {
        struct Document: Encodable { var rows: [Row]; var changes: [Change] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(Document(rows: rows, changes: changes))) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// What one side's outputs say per intent.
    private struct Side {
        var delivered: Set<String> = []
        var intents: Set<String> = []
        var verdicts: [String: Verdict] = [:]
        var users: [String: String] = [:]
        var types: [String: String] = [:]
        /// Per delivered intent, the intents of the delivery it went out in.
        var companions: [String: [String]] = [:]

        init(_ records: [FleetRecord]) {
            var final: [String: Decision] = [:]
            for record in records {
                switch record {
                case .delivery(let delivery):
                    let keys = delivery.mergedIntents.isEmpty ? ["notification:" + delivery.notificationId] : delivery.mergedIntents
                    for key in keys {
                        delivered.insert(key)
                        companions[key, default: []] += delivery.mergedIntents
                        users[key] = delivery.userId
                        types[key] = types[key] ?? delivery.notification
                    }
                case .decision(let decision):
                    // A generated notification's decision is keyed like its delivery.
                    guard let key = decision.intentId ?? decision.notificationId.map({ "notification:" + $0 }) else { break }
                    users[key] = decision.userId
                    if let kind = decision.kind, types[key] == nil { types[key] = kind.rawValue }
                    // A deferral is final only until a later decision replaces it.
                    if decision.outcome != .deferred || final[key].map({ $0.outcome == .deferred }) ?? true {
                        final[key] = decision
                    }
                case .intent(let intent):
                    intents.insert(intent.id)
                    users[intent.id] = intent.userId
                    types[intent.id] = intent.notification
                default:
                    break
                }
            }
            verdicts = final.mapValues { Verdict(outcome: $0.outcome.rawValue, reason: $0.reason, rule: $0.rule) }
        }
    }
}
