/// Rows of cells as aligned text columns, two spaces apart, the last column unpadded: the tables
/// the operator tools print (`dlq list`, replay's what-if summary, `decisions`).
public enum TextTable {
    public static func lines(_ rows: [[String]]) -> [String] {
        let widths = widths(rows)
        return rows.map { line($0, widths: widths) }
    }

    public static func render(_ rows: [[String]]) -> String { lines(rows).joined(separator: "\n") }

    /// Each column's width: its widest cell. A table too large to hold is measured row by row
    /// with `widen(_:toFit:)` and printed with `line(_:widths:)`.
    public static func widths(_ rows: [[String]]) -> [Int] {
        var widths: [Int] = []
        for row in rows { widen(&widths, toFit: row) }
        return widths
    }

    public static func widen(_ widths: inout [Int], toFit row: [String]) {
        if widths.count < row.count { widths += Array(repeating: 0, count: row.count - widths.count) }
        for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
    }

    /// One row, its cells padded to `widths` (which fit it) except the last.
    public static func line(_ row: [String], widths: [Int]) -> String {
        row.enumerated().map { i, cell in
            i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }
}
