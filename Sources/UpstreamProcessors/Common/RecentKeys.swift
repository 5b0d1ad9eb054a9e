/// The last `capacity` keys seen, oldest first: the bounded memory behind "the same id twice →
/// one" (P-ACC-1, re-delivered syncs).
///
/// An array rather than a set so the state encodes to the same bytes on every run (a Swift
/// `Set`'s order depends on the process's hash seed). Lookups are linear; capacities are a few
/// hundred at most.
public struct RecentKeys: Codable, Hashable, Sendable {
    public private(set) var keys: [String] = []

    public init() {}

    /// Keys as an image holds them, oldest first.
    init(keys: [String]) { self.keys = keys }

    public func contains(_ key: String) -> Bool { keys.contains(key) }

    /// Remembers `key`, forgetting the oldest keys beyond `capacity`.
    public mutating func remember(_ key: String, capacity: Int) {
        keys.append(key)
        if keys.count > capacity { keys.removeFirst(keys.count - capacity) }
    }
}
