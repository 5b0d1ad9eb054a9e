import Foundation
public import FleetModel
public import Kafka

/// A worker's settings: what the runtime needs to run one worker (the launcher reads them from
/// the environment, `WorkerEnvironment` in FleetService).
public struct WorkerSettings: Sendable {
    public var worker: Worker
    public var bootstrapServers: String
    public var groupId: String

    /// The worker's consumer group: `FLEET_GROUP_ID` when set, else the topic prefix and the
    /// worker's name, so fleets sharing a cluster under different prefixes never share a group.
    /// Tools that address a worker's group (`fleetctl partitions migrate`) name it the same way.
    public static func groupId(of worker: Worker, configured: String?, topicPrefix: String) -> String {
        configured ?? topicPrefix + worker.rawValue
    }
    public var instanceId: String?
    public var batchMaxRecords: Int
    public var guarantee: DeliveryGuarantee
    public var commitInterval: Duration
    /// `nil` when ticks are off.
    public var tickInterval: Duration?
    public var httpPort: Int
    public var httpHost: String
    /// A shipped profile's name or a profile file's path.
    public var profile: String
    public var metadataCheckInterval: Duration
    public var logLevel: String
    public var topics: TopicNamespace
    /// librdkafka properties from `KAFKA_*` variables (TLS, SASL, timeouts …).
    public var kafkaPassThrough: KafkaConfiguration
    /// Sizes of the record contract (`RecordLimits`); replay must use the same to agree.
    public var limits: RecordLimits
    /// Failed units caused by one input before it is dead-lettered (quarantined).
    public var poisonAttempts: Int
    /// Consecutive failed units after which the worker reports itself not alive.
    public var stallUnits: Int
    /// The commit unit after whose produce the worker kills itself (a crash drill); `nil`, the
    /// default, in production.
    public var crashDrillAfterUnits: Int?
    /// How state images are written (`FLEET_STATE_IMAGES`).
    public var stateImages: StateImageEncoding
    /// How many bytes of records (key + value, plus 64 a record) a partition's lane may have
    /// queued before its partition's fetching is paused (`FLEET_LANE_BUFFER_BYTES`); it fetches
    /// again once the lane is down to a quarter.
    public var laneBufferBytes: Int

    /// 4 MiB: about 17 000 records of the delivery inbox (182 bytes each, 246 as counted). The
    /// bound has to keep pauses rare, not only memory small: librdkafka drops what it prefetched
    /// for a partition when the partition is paused and fetches it again after the resume. At 4 000 records,
    /// the bound before, the 4-partition delivery worker paused all the time and did 40–53k
    /// records/s on one core; from 10 000 on it does 64–89k on both (RuntimeBenchmark).
    public static let defaultLaneBufferBytes = 4 << 20

    /// Settings as the launcher resolved them (`WorkerSettings(worker:environment:)` in
    /// FleetService reads them from the environment, with `WorkerEnvironment`'s defaults): the
    /// runtime itself parses no configuration.
    public init(
        worker: Worker, bootstrapServers: String, groupId: String, instanceId: String?, batchMaxRecords: Int,
        guarantee: DeliveryGuarantee, commitInterval: Duration, tickInterval: Duration?, httpPort: Int, httpHost: String,
        profile: String, metadataCheckInterval: Duration, logLevel: String, topics: TopicNamespace,
        kafkaPassThrough: KafkaConfiguration, limits: RecordLimits, poisonAttempts: Int, stallUnits: Int,
        crashDrillAfterUnits: Int?, stateImages: StateImageEncoding, laneBufferBytes: Int = defaultLaneBufferBytes
    ) {
        self.worker = worker
        self.bootstrapServers = bootstrapServers
        self.groupId = groupId
        self.instanceId = instanceId
        self.batchMaxRecords = batchMaxRecords
        self.guarantee = guarantee
        self.commitInterval = commitInterval
        self.tickInterval = tickInterval
        self.httpPort = httpPort
        self.httpHost = httpHost
        self.profile = profile
        self.metadataCheckInterval = metadataCheckInterval
        self.logLevel = logLevel
        self.topics = topics
        self.kafkaPassThrough = kafkaPassThrough
        self.limits = limits
        self.poisonAttempts = poisonAttempts
        self.stallUnits = stallUnits
        self.crashDrillAfterUnits = crashDrillAfterUnits
        self.stateImages = stateImages
        self.laneBufferBytes = laneBufferBytes
    }

    /// The consumer's configuration: our group and member id, then any `KAFKA_*` overrides.
    public var consumerConfiguration: KafkaConfiguration {
        var properties = ["bootstrap.servers": bootstrapServers, "group.id": groupId, "client.id": worker.rawValue]
        if let instanceId { properties["group.instance.id"] = instanceId }
        return KafkaConfiguration(properties: properties).merging(kafkaPassThrough.forConsumer)
    }

    /// The runtime's group consumer: the range assignor and `read_committed`, so exactly-once
    /// outputs of other workers are seen only once committed. `KAFKA_*` variables still win.
    ///
    /// Range, because it co-partitions: it assigns each topic's partitions to the members sorted
    /// by id (`group.instance.id` when every member is static), so with identical subscriptions
    /// and equal partition counts partition p of every subscribed topic — ingest, log, carried
    /// log — goes to one member, and user partitions spread evenly (4 over 2 members: 2/2; over
    /// 3: 2/1/1). Count-balancing assignors (cooperative-sticky, roundrobin) balance partitions
    /// across topics and split a user partition's topics over members. Range is eager: every
    /// rebalance revokes everything (each member commits first) and assigns the new set; the
    /// runtime keeps the folds of partitions it gets straight back (`FoldCore.resumeParked`), so
    /// only partitions that moved restore their state.
    ///
    /// `fetch.wait.max.ms` 100 (librdkafka: 500): librdkafka keeps one fetch in flight per
    /// broker, and a partition resumed after its restore joins the next one only. While the
    /// worker's other partitions are idle (app activity, an empty inbox) each fetch is held the
    /// whole wait, so a restored partition started up to two waits late: the cold-start burst's
    /// first fold came ~1 s after its first record. An idle worker sends ~10 fetches a second
    /// per broker instead of 2; a busy one is unaffected (its fetches return with data).
    ///
    /// Prefetching is bounded by bytes only (`KafkaConfiguration.byteBoundedPrefetch`: 64 MiB,
    /// no message count). librdkafka 2.0 stops fetching a partition whose queue holds
    /// `queued.min.messages` (the consumer's one queue, all partitions together) and looks again
    /// only when something else wakes its broker thread, up to a second later. At the default of
    /// 100 000, the delivery inbox's small records (~180 bytes) reached it within 0.1 s; the
    /// lanes emptied the queue in about half a second and the worker then sat idle for
    /// 0.3–0.4 s, over and over (RuntimeBenchmark, four alternating pairs per guarantee:
    /// at-least-once 127k → 151k records/s, exactly-once 130k → 141k, more in every pair). The
    /// byte bound stops fetching the same way, but 64 MiB of such records is two seconds of
    /// folding, longer than the wait; records ten times larger reach it ten times sooner
    /// (`KAFKA_QUEUED_MAX_MESSAGES_KBYTES` raises it). The cost is memory in a catch-up, ~370 000
    /// small messages with librdkafka's bookkeeping (docs/operations.md, "Prefetch").
    public var runtimeConsumerConfiguration: KafkaConfiguration {
        var properties = consumerConfiguration.properties
        properties["partition.assignment.strategy"] = "range"
        properties["isolation.level"] = "read_committed"
        properties["fetch.wait.max.ms"] = "100"
        properties.merge(KafkaConfiguration.byteBoundedPrefetch) { _, bound in bound }
        return KafkaConfiguration(properties: properties).merging(kafkaPassThrough.forConsumer)
    }

    /// The reader of `<worker>.state` during a restore: its own group name (librdkafka wants
    /// one), never committing, no member id.
    public var restoreConsumerConfiguration: KafkaConfiguration {
        var properties = runtimeConsumerConfiguration.properties
        properties["group.id"] = groupId + ".restore"
        properties["group.instance.id"] = nil
        properties["partition.assignment.strategy"] = nil
        return KafkaConfiguration(properties: properties)
    }

    /// The runtime's producer: under exactly-once transactional, with an id stable per instance
    /// (`<group>-<instance id>`) so a restarted instance fences its previous incarnation and
    /// aborts whatever it left open.
    public var runtimeProducerConfiguration: KafkaConfiguration {
        var configuration = producerConfiguration
        if guarantee == .exactlyOnce {
            let member = instanceId ?? "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
            configuration["transactional.id"] = "\(groupId)-\(member)"
        }
        return configuration.merging(kafkaPassThrough.forProducer)
    }

    /// The producer's configuration (idempotent, murmur2 partitioning by default). Consumer-only
    /// `KAFKA_*` properties are left out (librdkafka would warn about each).
    public var producerConfiguration: KafkaConfiguration {
        KafkaConfiguration(properties: ["bootstrap.servers": bootstrapServers, "client.id": worker.rawValue])
            .merging(kafkaPassThrough.forProducer)
    }
}

/// How a worker commits its work (DESIGN.md principle 4).
public enum DeliveryGuarantee: String, Sendable, Hashable, CaseIterable {
    /// One transaction per commit interval holding outputs, state, history and consumed offsets.
    case exactlyOnce = "exactly_once"
    /// Produce, await every acknowledgement, then commit offsets: a crash repeats only the
    /// uncommitted tail, as exact copies with the same ids.
    case atLeastOnce = "at_least_once"
}

public struct SettingsError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
