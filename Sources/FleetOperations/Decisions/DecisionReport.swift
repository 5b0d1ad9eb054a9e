import Foundation
import FleetModel
public import Kafka

/// `fleetctl decisions`' table: one row per decision (time, user, notification, outcome,
/// reason, rule, delivered text), in time order, joined with the delivery each names and the
/// intent it decided. With a user, only that user's records are kept (the rest of a partition
/// is read and dropped).
///
/// Memory stays bounded whatever the topics hold: decisions, deliveries and intents are kept in
/// sorters that spill sorted runs to temporary files (`SpillSorter`), the joins are merges of
/// sorted sequences (decisions by notification id against deliveries, then by intent id against
/// intents) and the table is printed as the last merge produces it, measured beforehand. The
/// text is the same as the in-memory table's: columns as wide as their widest cell.
public final class DecisionReport {
    public let user: String?
    /// Decisions read so far (the user's, with a user).
    public private(set) var decisionCount = 0
    /// Decisions by notification id: `DecisionRow.Read`.
    private let decisions: SpillSorter
    /// Deliveries by notification id: [notification id, notification, body].
    private let deliveries: SpillSorter
    /// Intents by id: [intent id, notification].
    private let intents: SpillSorter
    private let runLength: Int

    /// - Parameter runLength: rows each sorter holds before spilling a run (memory, not output).
    public init(user: String?, runLength: Int = 20_000) {
        self.user = user
        self.runLength = runLength
        decisions = SpillSorter(keyFields: 1, runLength: runLength)
        deliveries = SpillSorter(keyFields: 1, runLength: runLength)
        intents = SpillSorter(keyFields: 1, runLength: runLength)
    }

    /// Takes one record of the decisions, deliveries or inbox topics (logical names).
    public func add(_ message: KafkaMessage) throws {
        if let user, message.key != Array(user.utf8) { return }
        guard let value = message.value, let record = try? RecordCodec.decode(value) else { return }
        switch record {
        case .decision(let decision) where message.topic == Topics.decisions:
            guard user == nil || decision.userId == user else { return }
            decisionCount += 1
            try decisions.append(DecisionRow.read(decision, at: Timestamp(millisecondsSinceEpoch: message.timestamp ?? 0)))
        case .delivery(let delivery):
            try deliveries.append([delivery.notificationId, delivery.notification, delivery.body])
        case .intent(let intent):
            try intents.append([intent.id, intent.notification])
        default:
            break
        }
    }

    /// Hands the table's lines to `line`, header first, rows by time then decision id; empties
    /// the report.
    public func render(_ line: (String) throws -> Void) throws {
        // Decisions by notification id, joined with deliveries: by intent id.
        let byIntent = SpillSorter(keyFields: 1, runLength: runLength)
        try Self.join(decisions, deliveries) { decision, delivery in
            try byIntent.append(DecisionRow.delivered(decision, delivery))
        }
        // By intent id, joined with intents: the table's rows by time and id.
        let byTime = SpillSorter(keyFields: 2, runLength: runLength)
        var widths = TextTable.widths([DecisionRow.header])
        try Self.join(byIntent, intents) { decision, intent in
            let row = DecisionRow.shown(decision, intent)
            TextTable.widen(&widths, toFit: Array(row.dropFirst(2)))
            try byTime.append(row)
        }
        try line(TextTable.line(DecisionRow.header, widths: widths))
        try byTime.drain { row in try line(TextTable.line(Array(row.dropFirst(2)), widths: widths)) }
    }

    /// Each row of `left` with the last row of `right` whose first field is the same (nil when
    /// none is, or when the field is empty), in `left`'s key order: a merge of the two sorted.
    private static func join(
        _ left: SpillSorter, _ right: SpillSorter, _ body: ([String], [String]?) throws -> Void
    ) throws {
        let lefts = try left.sorted(), rights = try right.sorted()
        var pending = try rights.next()
        var match: [String]?
        while let row = try lefts.next() {
            let key = row[0]
            if match?[0] != key {
                match = nil
                while let candidate = pending, candidate[0] <= key {
                    if candidate[0] == key { match = candidate }
                    pending = try rights.next()
                }
            }
            try body(row, key.isEmpty ? nil : match)
        }
    }
}

/// The rows a decision goes through on its way to the table, as the sorters hold them (the
/// first field, or two, are the key of the next merge).
private enum DecisionRow {
    static let header = ["time", "user", "notification", "outcome", "reason", "rule", "text"]

    /// As read, keyed by notification id: [notification id, time key, time, id, user, intent
    /// id, has intent, kind, outcome, reason, rule].
    static func read(_ decision: Decision, at time: Timestamp) -> [String] {
        [
            decision.notificationId ?? "", timeKey(time), time.rfc3339, decision.id, decision.userId,
            decision.intentId ?? "", decision.intentId == nil ? "" : "1", decision.kind?.rawValue ?? "",
            decision.outcome.rawValue, decision.reason ?? "", decision.rule,
        ]
    }

    /// With its delivery, keyed by intent id: [intent id, has intent, time key, time, id, user,
    /// delivered, delivered notification, delivered text, kind, outcome, reason, rule].
    static func delivered(_ row: [String], _ delivery: [String]?) -> [String] {
        [
            row[5], row[6], row[1], row[2], row[3], row[4],
            delivery == nil ? "" : "1", delivery?[1] ?? "", delivery?[2] ?? "", row[7], row[8], row[9], row[10],
        ]
    }

    /// As shown, after its key [time key, id]: [time, user, notification, outcome, reason,
    /// rule, text]. A notification the engine made that was not delivered is named by its kind
    /// (`digest`, …); an intent's by its notification type, or its id when the intent is gone.
    static func shown(_ row: [String], _ intent: [String]?) -> [String] {
        let notification = !row[6].isEmpty ? row[7] : !row[1].isEmpty ? (intent?[1] ?? row[0]) : row[9]
        return [row[2], row[4], row[3], row[5], notification, row[10], row[11], row[12], row[8]]
    }

    /// Milliseconds since the epoch as a string whose order is the time order (fixed width,
    /// sign folded into the range of an unsigned number).
    static func timeKey(_ time: Timestamp) -> String {
        let unsigned = UInt64(bitPattern: time.millisecondsSinceEpoch) ^ (1 << 63)
        let digits = String(unsigned)
        return String(repeating: "0", count: 20 - digits.count) + digits
    }
}
