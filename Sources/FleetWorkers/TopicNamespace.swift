/// Maps the fleet's logical topic names (what the logic, ids and coordinates use) to the
/// physical names on the cluster, so several fleets — or test runs — can share one cluster.
///
/// Only the Kafka boundary translates: ids derived from coordinates use logical names, so a
/// fleet under a prefix produces exactly the records it would produce without one.
public struct TopicNamespace: Hashable, Sendable {
    public var prefix: String

    public init(prefix: String = "") { self.prefix = prefix }

    public func physical(_ logical: String) -> String { prefix + logical }

    /// The logical name of `physical`, or nil when it is outside this namespace.
    public func logical(_ physical: String) -> String? {
        guard physical.hasPrefix(prefix) else { return nil }
        return String(physical.dropFirst(prefix.count))
    }
}
