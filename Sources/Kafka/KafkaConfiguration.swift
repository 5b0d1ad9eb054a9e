import Foundation

/// librdkafka properties for one client, with typed accessors for the ones the fleet sets itself.
///
/// Every typed field is a view over `properties`, so there is one source of truth and any other
/// librdkafka property (TLS, SASL, tuning) passes through unchanged — operators configure those
/// with `KAFKA_*` environment variables (see `fromEnvironment`) without code changes.
public struct KafkaConfiguration: Sendable, Equatable {
    /// librdkafka property name → value, exactly as given to `rd_kafka_conf_set`.
    public var properties: [String: String]

    public init(properties: [String: String] = [:]) {
        self.properties = properties
    }

    public init(bootstrapServers: String, properties: [String: String] = [:]) {
        self.properties = properties
        self.bootstrapServers = bootstrapServers
    }

    /// Any librdkafka property by its name (`"security.protocol"`); `nil` removes it.
    public subscript(property: String) -> String? {
        get { properties[property] }
        set { properties[property] = newValue }
    }

    /// A copy where `other`'s properties win over ours.
    public func merging(_ other: KafkaConfiguration) -> KafkaConfiguration {
        KafkaConfiguration(properties: properties.merging(other.properties) { _, theirs in theirs })
    }

    // MARK: Roles

    /// Properties librdkafka reads only in consumers: a producer given one logs a `CONFWARN`
    /// at creation. Operators set them once (`KAFKA_SESSION_TIMEOUT_MS`) for every client of a
    /// worker, so producers drop them.
    public static let consumerOnlyProperties: Set<String> = [
        "group.id", "group.instance.id", "partition.assignment.strategy", "session.timeout.ms",
        "heartbeat.interval.ms", "group.protocol.type", "coordinator.query.interval.ms", "max.poll.interval.ms",
        "enable.auto.commit", "auto.commit.interval.ms", "enable.auto.offset.store", "queued.min.messages",
        "queued.max.messages.kbytes", "fetch.wait.max.ms", "fetch.message.max.bytes", "max.partition.fetch.bytes",
        "fetch.max.bytes", "fetch.min.bytes", "fetch.error.backoff.ms", "isolation.level", "enable.partition.eof",
        "check.crcs", "auto.offset.reset", "offset.store.method",
    ]

    /// Properties librdkafka reads only in producers; consumers drop them for the same reason.
    public static let producerOnlyProperties: Set<String> = [
        "transactional.id", "transaction.timeout.ms", "enable.idempotence", "enable.gapless.guarantee",
        "queue.buffering.max.messages", "queue.buffering.max.kbytes", "queue.buffering.max.ms", "linger.ms",
        "message.send.max.retries", "retries", "queue.buffering.backpressure.threshold", "compression.codec",
        "compression.type", "compression.level", "batch.num.messages", "batch.size", "delivery.report.only.error",
        "sticky.partitioning.linger.ms", "acks", "request.required.acks", "request.timeout.ms", "message.timeout.ms",
        "delivery.timeout.ms", "partitioner",
    ]

    /// A consumer prefetch bounded by bytes only: `queued.max.messages.kbytes` 64 MiB
    /// (librdkafka's default, stated so the bound is ours) and `queued.min.messages` at
    /// librdkafka's maximum. librdkafka 2.0 stops fetching once its queue holds
    /// `queued.min.messages` (default 100 000) and looks again only when something else wakes its
    /// broker thread, up to a second later (librdkafka #2879; 2.2's `fetch.queue.backoff.ms` is
    /// not in Debian's 2.0.2): small records reach that count long before the byte bound, and
    /// the reader then sits idle. The worker runtime and the bulk readers both use this.
    public static let byteBoundedPrefetch: [String: String] = [
        "queued.max.messages.kbytes": "65536",
        "queued.min.messages": "10000000",
    ]

    /// This configuration without the properties only consumers read.
    public var forProducer: KafkaConfiguration {
        KafkaConfiguration(properties: properties.filter { !Self.consumerOnlyProperties.contains($0.key) })
    }

    /// This configuration without the properties only producers read.
    public var forConsumer: KafkaConfiguration {
        KafkaConfiguration(properties: properties.filter { !Self.producerOnlyProperties.contains($0.key) })
    }

    // MARK: Environment

    /// Properties from environment variables with `prefix` (default `KAFKA_`): the rest of the name is
    /// lower-cased and `_` becomes `.`, so `KAFKA_SECURITY_PROTOCOL=SASL_SSL` sets
    /// `security.protocol=SASL_SSL` and `KAFKA_SASL_MECHANISMS` sets `sasl.mechanisms`.
    /// librdkafka validates names and values when a client is created.
    public static func fromEnvironment(_ environment: [String: String], prefix: String = "KAFKA_") -> KafkaConfiguration {
        var configuration = KafkaConfiguration()
        for (name, value) in environment where name.hasPrefix(prefix) && name.count > prefix.count {
            let property = name.dropFirst(prefix.count).lowercased().replacingOccurrences(of: "_", with: ".")
            configuration.properties[property] = value
        }
        return configuration
    }

    /// `fromEnvironment(_:prefix:)` over this process's environment.
    public static func fromEnvironment(prefix: String = "KAFKA_") -> KafkaConfiguration {
        fromEnvironment(ProcessInfo.processInfo.environment, prefix: prefix)
    }

    // MARK: Typed properties

    /// `bootstrap.servers`: comma-separated `host:port` list.
    public var bootstrapServers: String? {
        get { properties["bootstrap.servers"] }
        set { properties["bootstrap.servers"] = newValue }
    }

    /// `client.id`: shows up in broker logs and metrics.
    public var clientId: String? {
        get { properties["client.id"] }
        set { properties["client.id"] = newValue }
    }

    /// `group.id`: the consumer group; required by `KafkaConsumer.subscribe`.
    public var groupId: String? {
        get { properties["group.id"] }
        set { properties["group.id"] = newValue }
    }

    /// `group.instance.id`: static membership, so a restart keeps the member's partitions.
    public var groupInstanceId: String? {
        get { properties["group.instance.id"] }
        set { properties["group.instance.id"] = newValue }
    }

    /// `transactional.id`: makes a producer transactional; one id per input partition set/instance.
    public var transactionalId: String? {
        get { properties["transactional.id"] }
        set { properties["transactional.id"] = newValue }
    }

    /// `session.timeout.ms`: how long the group waits for a silent member.
    public var sessionTimeoutMs: Int? {
        get { properties["session.timeout.ms"].flatMap { Int($0) } }
        set { properties["session.timeout.ms"] = newValue.map(String.init) }
    }

    /// `heartbeat.interval.ms`.
    public var heartbeatIntervalMs: Int? {
        get { properties["heartbeat.interval.ms"].flatMap { Int($0) } }
        set { properties["heartbeat.interval.ms"] = newValue.map(String.init) }
    }

    /// `linger.ms`: how long the producer waits to fill a batch.
    public var lingerMs: Int? {
        get { properties["linger.ms"].flatMap { Int($0) } }
        set { properties["linger.ms"] = newValue.map(String.init) }
    }

    /// `enable.auto.commit`. Our consumers default it to `false` (commits are explicit).
    public var enableAutoCommit: Bool? {
        get { properties["enable.auto.commit"].map { $0 == "true" } }
        set { properties["enable.auto.commit"] = newValue.map { $0 ? "true" : "false" } }
    }

    /// Where a group starts on a partition without a committed offset.
    public enum AutoOffsetReset: String, Sendable {
        case earliest, latest, error
    }

    /// `auto.offset.reset`.
    public var autoOffsetReset: AutoOffsetReset? {
        get { properties["auto.offset.reset"].flatMap(AutoOffsetReset.init(rawValue:)) }
        set { properties["auto.offset.reset"] = newValue?.rawValue }
    }

    /// Whether a consumer sees records of open and aborted transactions.
    public enum IsolationLevel: String, Sendable {
        case readCommitted = "read_committed"
        case readUncommitted = "read_uncommitted"
    }

    /// `isolation.level`.
    public var isolationLevel: IsolationLevel? {
        get { properties["isolation.level"].flatMap(IsolationLevel.init(rawValue:)) }
        set { properties["isolation.level"] = newValue?.rawValue }
    }

    /// Partition assignment strategies. `cooperativeSticky` moves only the partitions that change
    /// owner (incremental rebalance); the others are eager (everything is revoked, then reassigned).
    public enum AssignmentStrategy: String, Sendable {
        case range
        case roundRobin = "roundrobin"
        case cooperativeSticky = "cooperative-sticky"
    }

    /// `partition.assignment.strategy` (nil when unset or a list of several strategies).
    public var assignmentStrategy: AssignmentStrategy? {
        get { properties["partition.assignment.strategy"].flatMap(AssignmentStrategy.init(rawValue:)) }
        set { properties["partition.assignment.strategy"] = newValue?.rawValue }
    }

    /// `partitioner`. Our producers default to `murmur2_random`, the Java client's partitioning, so
    /// every producer of the fleet (and Java tools) puts a key in the same partition.
    public var partitioner: String? {
        get { properties["partitioner"] }
        set { properties["partitioner"] = newValue }
    }
}
