import Foundation
public import FleetModel
public import Kafka

/// Every environment variable a worker reads, in one place: the README's table, the deploy
/// manifests and the check that they agree are all generated from or tested against this list.
public enum WorkerEnvironment {
    public struct Variable: Sendable, Hashable {
        public var name: String
        public var defaultValue: String?
        public var meaning: String
    }

    public static let bootstrapServers = Variable(
        name: "FLEET_BOOTSTRAP_SERVERS", defaultValue: "127.0.0.1:9092",
        meaning: "Kafka bootstrap servers (host:port, comma-separated).")
    public static let groupId = Variable(
        name: "FLEET_GROUP_ID", defaultValue: nil,
        meaning: "Consumer group; defaults to FLEET_TOPIC_PREFIX + the worker's name (one group per worker and fleet).")
    public static let instanceId = Variable(
        name: "FLEET_INSTANCE_ID", defaultValue: nil,
        meaning: "Stable member id (`group.instance.id`), e.g. the pod name; defaults to $POD_NAME, else unset.")
    public static let batchMaxRecords = Variable(
        name: "FLEET_BATCH_MAX_RECORDS", defaultValue: "1000",
        meaning: "Most records handed over by one poll; a commit interval folds as many polls as it takes.")
    public static let guarantee = Variable(
        name: "FLEET_GUARANTEE", defaultValue: "exactly_once",
        meaning: "`exactly_once` (one transaction per commit interval: outputs, state, history and offsets; Apache Kafka >= 2.5) or `at_least_once` (produce, await acks, then commit offsets; for brokers without complete transactions).")
    public static let commitInterval = Variable(
        name: "FLEET_COMMIT_INTERVAL_MS", defaultValue: "100",
        meaning: "How long a commit unit collects work before its outputs, state, history and offsets are committed together.")
    public static let tickInterval = Variable(
        name: "FLEET_TICK_INTERVAL_MS", defaultValue: "1000",
        meaning: "Idle time after which an inbox partition with a due timer gets a `tick` record (delivery and reminder workers); 0 turns ticks off (replays, equivalence tests).")
    public static let httpPort = Variable(
        name: "FLEET_HTTP_PORT", defaultValue: "8080",
        meaning: "Port of /healthz, /readyz and /metrics; 0 picks a free port (logged at start).")
    public static let httpHost = Variable(
        name: "FLEET_HTTP_HOST", defaultValue: "0.0.0.0",
        meaning: "Address the HTTP port binds to.")
    public static let profile = Variable(
        name: "FLEET_PROFILE", defaultValue: "rin",
        meaning: "Policy profile: a shipped profile's name (rin, fitcircle) or the path of a profile YAML file (e.g. a mounted ConfigMap).")
    public static let metadataCheckInterval = Variable(
        name: "FLEET_METADATA_CHECK_INTERVAL_MS", defaultValue: "10000",
        meaning: "How often partition counts and the topic-generation registry are re-read; a topic whose count changed stops being processed (no silent reshuffle); a partition migration's next phase is taken up.")
    public static let topicPrefix = Variable(
        name: "FLEET_TOPIC_PREFIX", defaultValue: "",
        meaning: "Prefix of every physical topic name (e.g. `staging.`), so fleets can share a cluster. Record ids use the logical names.")
    public static let logLevel = Variable(
        name: "FLEET_LOG_LEVEL", defaultValue: "info", meaning: "trace, debug, info, notice, warning, error or critical.")
    public static let maxRecordBytes = Variable(
        name: "FLEET_MAX_RECORD_BYTES", defaultValue: String(RecordLimits.standard.maxRecordBytes),
        meaning: "Largest input record (key + value) a worker folds or forwards; a larger one is dead-lettered by reference (source coordinates, size, SHA-256, first bytes). 16384–450000.")
    public static let maxOutputBytes = Variable(
        name: "FLEET_MAX_OUTPUT_BYTES", defaultValue: String(RecordLimits.standard.maxOutputBytes),
        meaning: "Largest output record a step may write; an input whose step would write a larger one is dead-lettered instead, deterministically (replay agrees). 16384–450000.")
    public static let maxStateBytes = Variable(
        name: "FLEET_MAX_STATE_BYTES", defaultValue: String(RecordLimits.standard.maxStateBytes),
        meaning: "Largest encoded user state a step may leave; an input that would grow a state past it is dead-lettered instead, deterministically. 16384–450000.")
    public static let poisonAttempts = Variable(
        name: "FLEET_POISON_ATTEMPTS", defaultValue: "3",
        meaning: "How many commit units may fail on a record one input caused (e.g. the broker refuses its size) before that input is dead-lettered with a `quarantined-after` header and the partition goes on.")
    public static let stallUnits = Variable(
        name: "FLEET_STALL_UNITS", defaultValue: "20",
        meaning: "Consecutive failed commit units after which /healthz fails (the worker makes no progress: restart it); /readyz fails from the third.")
    public static let crashDrill = Variable(
        name: "FLEET_CRASH_DRILL_AFTER_UNITS", defaultValue: nil,
        meaning: "Crash drill, never set in production: after producing its n-th commit unit and before committing it, the worker SIGKILLs itself, so a drill (or the crash-equivalence tests) hits the produce-to-commit window for certain.")
    public static let stateImages = Variable(
        name: "FLEET_STATE_IMAGES", defaultValue: "binary",
        meaning: "How state images go to `<worker>.state` and `<worker>.history`: `binary` (versioned protobuf), or `json` as builds before binary images wrote them, so the fleet can still be rolled back to such a build during an upgrade. Both are always read.")
    public static let kafkaPassThrough = Variable(
        name: "KAFKA_*", defaultValue: nil,
        meaning: "Any librdkafka property: KAFKA_SECURITY_PROTOCOL=SASL_SSL sets security.protocol (lowercase, _ → .).")

    public static let all: [Variable] = [
        bootstrapServers, groupId, instanceId, guarantee, commitInterval, tickInterval, batchMaxRecords,
        httpPort, httpHost, profile, metadataCheckInterval, topicPrefix, logLevel, maxRecordBytes, maxOutputBytes,
        maxStateBytes, poisonAttempts, stallUnits, crashDrill, stateImages, kafkaPassThrough,
    ]
}

/// A worker's settings, read from the environment with the defaults of `WorkerEnvironment`.
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

    public init(worker: Worker, environment: [String: String]) throws(SettingsError) {
        func value(_ v: WorkerEnvironment.Variable) -> String? {
            environment[v.name].flatMap { $0.isEmpty ? nil : $0 } ?? v.defaultValue
        }
        func positiveInt(_ v: WorkerEnvironment.Variable) throws(SettingsError) -> Int {
            let text = value(v) ?? ""
            guard let n = Int(text), n > 0 else { throw SettingsError("\(v.name) must be a positive integer, got '\(text)'") }
            return n
        }
        func nonNegativeInt(_ v: WorkerEnvironment.Variable) throws(SettingsError) -> Int {
            let text = value(v) ?? ""
            guard let n = Int(text), n >= 0 else { throw SettingsError("\(v.name) must be a non-negative integer, got '\(text)'") }
            return n
        }
        self.worker = worker
        self.bootstrapServers = value(WorkerEnvironment.bootstrapServers) ?? "127.0.0.1:9092"
        self.groupId = Self.groupId(
            of: worker, configured: value(WorkerEnvironment.groupId), topicPrefix: value(WorkerEnvironment.topicPrefix) ?? "")
        self.instanceId = value(WorkerEnvironment.instanceId) ?? environment["POD_NAME"]
        self.batchMaxRecords = try positiveInt(WorkerEnvironment.batchMaxRecords)
        let guaranteeText = value(WorkerEnvironment.guarantee) ?? ""
        guard let guarantee = DeliveryGuarantee(rawValue: guaranteeText) else {
            throw SettingsError("FLEET_GUARANTEE must be exactly_once or at_least_once, got '\(guaranteeText)'")
        }
        self.guarantee = guarantee
        self.commitInterval = .milliseconds(try positiveInt(WorkerEnvironment.commitInterval))
        let tick = try nonNegativeInt(WorkerEnvironment.tickInterval)
        self.tickInterval = tick == 0 ? nil : .milliseconds(tick)
        let port = try nonNegativeInt(WorkerEnvironment.httpPort)
        guard port <= 65_535 else { throw SettingsError("FLEET_HTTP_PORT must be at most 65535, got '\(port)'") }
        self.httpPort = port
        self.httpHost = value(WorkerEnvironment.httpHost) ?? "0.0.0.0"
        self.profile = value(WorkerEnvironment.profile) ?? "rin"
        self.metadataCheckInterval = .milliseconds(try positiveInt(WorkerEnvironment.metadataCheckInterval))
        self.logLevel = value(WorkerEnvironment.logLevel) ?? "info"
        self.topics = TopicNamespace(prefix: value(WorkerEnvironment.topicPrefix) ?? "")
        self.kafkaPassThrough = KafkaConfiguration.fromEnvironment(environment)
        self.limits = try Self.limits(environment: environment)
        self.poisonAttempts = try positiveInt(WorkerEnvironment.poisonAttempts)
        self.stallUnits = try positiveInt(WorkerEnvironment.stallUnits)
        self.crashDrillAfterUnits = value(WorkerEnvironment.crashDrill) == nil ? nil : try positiveInt(WorkerEnvironment.crashDrill)
        let imagesText = value(WorkerEnvironment.stateImages) ?? ""
        guard let stateImages = StateImageEncoding(rawValue: imagesText) else {
            throw SettingsError("FLEET_STATE_IMAGES must be binary or json, got '\(imagesText)'")
        }
        self.stateImages = stateImages
    }

    /// The record contract's sizes from `FLEET_MAX_RECORD_BYTES`, `FLEET_MAX_OUTPUT_BYTES` and
    /// `FLEET_MAX_STATE_BYTES` (defaults: `RecordLimits.standard`). `fleetctl replay` reads
    /// them the same way: a replay refuses exactly what the worker refused only with the same
    /// limits.
    public static func limits(environment: [String: String]) throws(SettingsError) -> RecordLimits {
        func byteLimit(_ v: WorkerEnvironment.Variable) throws(SettingsError) -> Int {
            let text = environment[v.name].flatMap { $0.isEmpty ? nil : $0 } ?? v.defaultValue ?? ""
            guard let n = Int(text), RecordLimits.allowedRange.contains(n) else {
                throw SettingsError("\(v.name) must be a whole number in \(RecordLimits.allowedRange.lowerBound)–\(RecordLimits.allowedRange.upperBound), got '\(text)'")
            }
            return n
        }
        return RecordLimits(
            maxRecordBytes: try byteLimit(WorkerEnvironment.maxRecordBytes), maxOutputBytes: try byteLimit(WorkerEnvironment.maxOutputBytes),
            maxStateBytes: try byteLimit(WorkerEnvironment.maxStateBytes))
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
    public var runtimeConsumerConfiguration: KafkaConfiguration {
        var properties = consumerConfiguration.properties
        properties["partition.assignment.strategy"] = "range"
        properties["isolation.level"] = "read_committed"
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
