/// Rows of cells as aligned text columns, two spaces apart, the last column unpadded: the tables
/// the operator tools print (`dlq list`, replay's what-if summary, `decisions`).
public enum TextTable {
    public static func lines(_ rows: [[String]]) -> [String] {
        guard let width = rows.map(\.count).max() else { return [] }
        var widths = Array(repeating: 0, count: width)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    public static func render(_ rows: [[String]]) -> String { lines(rows).joined(separator: "\n") }
}
