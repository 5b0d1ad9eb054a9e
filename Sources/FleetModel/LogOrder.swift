/// Log order of ids derived from log coordinates (`topic:partition:offset:index`, see
/// `OutputIDs`): the record written earlier in the log comes first.
///
/// Comparing such ids as strings is wrong as soon as an offset gains a digit (`…:10:0` sorts
/// before `…:9:0`), which would make "oldest first" (P-BUD-2) depend on how many records a
/// partition happened to hold. Ids of another shape (e.g. an upstream intent id) fall back to
/// plain string order, after every log-derived id.
public enum LogOrder {
    /// Whether `a` was produced before `b`.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        switch (coordinates(a), coordinates(b)) {
        case let (x?, y?):
            if x.prefix != y.prefix { return x.prefix < y.prefix }
            if x.offset != y.offset { return x.offset < y.offset }
            return x.index < y.index
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return a < b
        }
    }

    /// `topic:partition` (compared as text: it names the log), offset and index.
    private static func coordinates(_ id: String) -> (prefix: Substring, offset: Int64, index: Int64)? {
        guard let lastColon = id.lastIndex(of: ":"),
              let index = Int64(id[id.index(after: lastColon)...]),
              let offsetColon = id[..<lastColon].lastIndex(of: ":"),
              let offset = Int64(id[id.index(after: offsetColon)..<lastColon])
        else { return nil }
        return (id[..<offsetColon], offset, index)
    }
}
