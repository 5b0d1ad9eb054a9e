/// Log order of ids derived from log coordinates (see `OutputIDs`): `topic:partition:offset:index`,
/// or `topic:partition:offset:originIndex:index` for the outputs of a record a fleet worker
/// wrote into an inbox. Among ids of one log, the record written earlier comes first, and among
/// the ids of one origin, the order they were handed out in.
///
/// After the `topic:partition` text (which names the log; logs have no order among themselves,
/// so text order merely makes the comparison total), every component is compared as a number:
/// offset, then originIndex and index. Comparing them as text is wrong as soon as a number
/// gains a digit (`…:10:0` sorts before `…:9:0`), which would make "oldest first" (P-BUD-2)
/// depend on how many records a partition happened to hold. When one id's numbers are a prefix
/// of the other's, the shorter comes first. Ids of another shape (e.g. an intent id a test
/// wrote) fall back to plain string order, after every log-derived id.
public enum LogOrder {
    /// Whether `a` was produced before `b`.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        switch (DerivedID(a), DerivedID(b)) {
        case let (x?, y?): x.precedes(y)
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): a < b
        }
    }

    /// A log-derived id: its log (`topic:partition`) and at least two numbers after it.
    private struct DerivedID {
        let log: Substring
        /// The colon-separated numbers after the log: offset, (originIndex,) index.
        let numbers: Substring

        init?(_ id: String) {
            guard let topicEnd = id.firstIndex(of: ":"),
                  let logEnd = id[id.index(after: topicEnd)...].firstIndex(of: ":")
            else { return nil }
            let numbers = id[id.index(after: logEnd)...]
            var count = 0
            for component in numbers.split(separator: ":", omittingEmptySubsequences: false) {
                guard Int64(component) != nil else { return nil }
                count += 1
            }
            guard count >= 2 else { return nil }
            self.log = id[..<logEnd]
            self.numbers = numbers
        }

        func precedes(_ other: DerivedID) -> Bool {
            if log != other.log { return log < other.log }
            var mine = numbers.split(separator: ":").makeIterator()
            var theirs = other.numbers.split(separator: ":").makeIterator()
            while true {
                switch (mine.next().flatMap { Int64($0) }, theirs.next().flatMap { Int64($0) }) {
                case let (x?, y?) where x != y: return x < y
                case (.some, .some): continue
                case (nil, .some): return true
                case (.some, nil), (nil, nil): return false
                }
            }
        }
    }
}
