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
        meaning: "Records processed before their outputs are produced and offsets committed.")
    public static let commitIntervalMs = Variable(
        name: "FLEET_COMMIT_INTERVAL_MS", defaultValue: "100",
        meaning: "Longest time a processed batch waits before its outputs and offsets are committed.")
    public static let logLevel = Variable(
        name: "FLEET_LOG_LEVEL", defaultValue: "info", meaning: "trace, debug, info, notice, warning, error or critical.")
    public static let kafkaPassThrough = Variable(
        name: "KAFKA_*", defaultValue: nil,
        meaning: "Any librdkafka property: KAFKA_SECURITY_PROTOCOL=SASL_SSL sets security.protocol (lowercase, _ → .).")

    public static let all: [Variable] = [
        bootstrapServers, groupId, instanceId, batchMaxRecords, commitIntervalMs, logLevel, kafkaPassThrough,
    ]
}

/// A worker's settings, read from the environment with the defaults of `WorkerEnvironment`.
public struct WorkerSettings: Sendable, Hashable {
    public var worker: Worker
    public var bootstrapServers: String
    public var groupId: String
    public var instanceId: String?
    public var batchMaxRecords: Int
    public var commitIntervalMs: Int
    public var logLevel: String
    /// librdkafka properties from `KAFKA_*` variables.
    public var kafkaProperties: [String: String]

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
        self.commitIntervalMs = try positiveInt(WorkerEnvironment.commitIntervalMs)
        self.logLevel = value(WorkerEnvironment.logLevel) ?? "info"
        var properties: [String: String] = [:]
        for (name, v) in environment where name.hasPrefix("KAFKA_") && name.count > 6 {
            properties[name.dropFirst(6).lowercased().replacingOccurrences(of: "_", with: ".")] = v
        }
        self.kafkaProperties = properties
    }
}

public struct SettingsError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
