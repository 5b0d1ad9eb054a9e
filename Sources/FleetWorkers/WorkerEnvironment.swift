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
        meaning: "Consumer group; defaults to the worker's name (one group per worker).")
    public static let instanceId = Variable(
        name: "FLEET_INSTANCE_ID", defaultValue: nil,
        meaning: "Stable member id (`group.instance.id`), e.g. the pod name; defaults to $POD_NAME, else unset.")
    public static let batchMaxRecords = Variable(
        name: "FLEET_BATCH_MAX_RECORDS", defaultValue: "1000",
        meaning: "Most records folded per batch; a batch's outputs are produced and acknowledged before its offsets are committed.")
    public static let topicPrefix = Variable(
        name: "FLEET_TOPIC_PREFIX", defaultValue: "",
        meaning: "Prefix of every physical topic name (e.g. `staging.`), so fleets can share a cluster. Record ids use the logical names.")
    public static let logLevel = Variable(
        name: "FLEET_LOG_LEVEL", defaultValue: "info", meaning: "trace, debug, info, notice, warning, error or critical.")
    public static let kafkaPassThrough = Variable(
        name: "KAFKA_*", defaultValue: nil,
        meaning: "Any librdkafka property: KAFKA_SECURITY_PROTOCOL=SASL_SSL sets security.protocol (lowercase, _ → .).")

    public static let all: [Variable] = [
        bootstrapServers, groupId, instanceId, batchMaxRecords, topicPrefix, logLevel, kafkaPassThrough,
    ]
}

/// A worker's settings, read from the environment with the defaults of `WorkerEnvironment`.
public struct WorkerSettings: Sendable {
    public var worker: Worker
    public var bootstrapServers: String
    public var groupId: String
    public var instanceId: String?
    public var batchMaxRecords: Int
    public var logLevel: String
    public var topics: TopicNamespace
    /// librdkafka properties from `KAFKA_*` variables (TLS, SASL, timeouts …).
    public var kafkaPassThrough: KafkaConfiguration

    public init(worker: Worker, environment: [String: String]) throws(SettingsError) {
        func value(_ v: WorkerEnvironment.Variable) -> String? {
            environment[v.name].flatMap { $0.isEmpty ? nil : $0 } ?? v.defaultValue
        }
        func positiveInt(_ v: WorkerEnvironment.Variable) throws(SettingsError) -> Int {
            let text = value(v) ?? ""
            guard let n = Int(text), n > 0 else { throw SettingsError("\(v.name) must be a positive integer, got '\(text)'") }
            return n
        }
        self.worker = worker
        self.bootstrapServers = value(WorkerEnvironment.bootstrapServers) ?? "127.0.0.1:9092"
        self.groupId = value(WorkerEnvironment.groupId) ?? worker.rawValue
        self.instanceId = value(WorkerEnvironment.instanceId) ?? environment["POD_NAME"]
        self.batchMaxRecords = try positiveInt(WorkerEnvironment.batchMaxRecords)
        self.logLevel = value(WorkerEnvironment.logLevel) ?? "info"
        self.topics = TopicNamespace(prefix: value(WorkerEnvironment.topicPrefix) ?? "")
        self.kafkaPassThrough = KafkaConfiguration.fromEnvironment(environment)
    }

    /// The consumer's configuration: our group and member id, then any `KAFKA_*` overrides.
    public var consumerConfiguration: KafkaConfiguration {
        var properties = ["bootstrap.servers": bootstrapServers, "group.id": groupId, "client.id": worker.rawValue]
        if let instanceId { properties["group.instance.id"] = instanceId }
        return KafkaConfiguration(properties: properties).merging(kafkaPassThrough)
    }

    /// The producer's configuration (idempotent, murmur2 partitioning by default).
    public var producerConfiguration: KafkaConfiguration {
        KafkaConfiguration(properties: ["bootstrap.servers": bootstrapServers, "client.id": worker.rawValue])
            .merging(kafkaPassThrough)
    }
}

public struct SettingsError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
