public import FleetModel

/// `fleetctl simulate --summary`: per user and day, how many intents were delivered and how
/// many were held back, by outcome and reason, counted from the final `decision` records.
///
/// A day is the user's local day in the time zone a stage knows for the user when the decision
/// is made (the delivery engine's settings), else the UTC day; each row names the zone it used.
/// `deferred` decisions are not counted: a deferred intent gets its final decision later.
public struct SimulationSummary: Hashable, Sendable {
    private struct Row: Hashable, Sendable {
        var user: String
        var day: CivilDate
        var zone: String
    }

    private var counts: [Row: [String: Int]] = [:]

    public init() {}

    /// Counts `output` if it is a final decision, with `zone` the user's zone at that moment.
    public mutating func add(_ output: SimulationOutput, zone: Zone?) {
        guard case .decision(let decision)? = output.record, decision.outcome.isFinal else { return }
        let zone = zone ?? .utc
        let row = Row(user: decision.userId, day: zone.localDate(at: output.at), zone: zone.identifier)
        counts[row, default: [:]][Self.column(of: decision), default: 0] += 1
    }

    /// `delivered`, or the outcome with its reason (`suppressed: budget`).
    static func column(of decision: Decision) -> String {
        switch (decision.outcome, decision.reason) {
        case (.delivered, _): "delivered"
        case (let outcome, let reason?): "\(outcome.rawValue): \(reason)"
        case (let outcome, nil): outcome.rawValue
        }
    }

    /// The table: a header line saying how days are counted, then one row per user and day
    /// (sorted by user, then day) with a column for `delivered` and one for each other
    /// outcome and reason that occurs.
    public var table: String {
        let rows = counts.keys.sorted { ($0.user, $0.day, $0.zone) < ($1.user, $1.day, $1.zone) }
        let heldBack = Set(counts.values.flatMap(\.keys)).subtracting(["delivered"]).sorted()
        let header = ["user", "day", "zone", "delivered"] + heldBack
        var lines = [header]
        for row in rows {
            let count = counts[row, default: [:]]
            lines.append(
                [row.user, row.day.description, row.zone, String(count["delivered", default: 0])]
                    + heldBack.map { String(count[$0, default: 0]) })
        }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        var text = "# decisions per user and day; a day is the user's local day in the zone shown "
            + "(UTC where no worker knows the user's time zone)\n"
        for line in lines {
            let cells = line.enumerated().map { column, cell in
                column == line.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }
            text += cells.joined(separator: "  ") + "\n"
        }
        if rows.isEmpty { text += "(no decisions)\n" }
        return text
    }
}
