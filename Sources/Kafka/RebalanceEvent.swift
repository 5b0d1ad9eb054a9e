/// A change of a consumer's partition assignment, delivered to the rebalance handler given to
/// `KafkaConsumer.subscribe` *before* librdkafka applies it.
///
/// With the cooperative protocol (`cooperative-sticky`) the partitions are only the ones that
/// move; with eager protocols (`range`, `roundrobin`) a revocation lists the whole assignment and
/// is followed by an assignment of the whole new one.
public struct RebalanceEvent: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// These partitions are about to be added: restore state for them now (or let the
        /// consumer pause them on assignment and restore concurrently).
        case assigned
        /// These partitions are about to be taken away: finish, flush and commit their work now.
        case revoked
        /// These partitions were already taken away (session lost): their uncommitted work must be
        /// discarded, since another member may own them; committing is pointless.
        case lost
    }

    public enum RebalanceProtocol: Sendable, Hashable {
        case eager, cooperative
    }

    public var kind: Kind
    public var partitions: [TopicPartition]
    public var rebalanceProtocol: RebalanceProtocol

    public init(kind: Kind, partitions: [TopicPartition], rebalanceProtocol: RebalanceProtocol) {
        self.kind = kind
        self.partitions = partitions
        self.rebalanceProtocol = rebalanceProtocol
    }

    public var description: String {
        "\(kind) \(partitions.map(\.description).joined(separator: ",")) (\(rebalanceProtocol))"
    }
}

/// Called on each assignment change. The consumer's poll thread waits for it to return before it
/// applies the change, so when it returns the caller's bookkeeping is in step with librdkafka.
/// It may call the consumer (commit, committed, pause, resume, seek, assignment …) but must not
/// wait for its messages or call `close`: the poll thread that would serve them is waiting for it.
public typealias RebalanceHandler = @Sendable (RebalanceEvent) async -> Void
