import Foundation
public import FleetModel
public import FleetWorkers
import Kafka

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
    public static let laneBufferBytes = Variable(
        name: "FLEET_LANE_BUFFER_BYTES", defaultValue: String(WorkerSettings.defaultLaneBufferBytes),
        meaning: "Bytes of fetched records (key + value, plus 64 a record) a partition's fold may have queued before the partition's fetching is paused, until it is down to a quarter: the memory bound per assigned partition. Keep it large enough that pauses are rare: a pause makes librdkafka drop what it prefetched for the partition and fetch it again.")
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
        bootstrapServers, groupId, instanceId, guarantee, commitInterval, tickInterval, batchMaxRecords, laneBufferBytes,
        httpPort, httpHost, profile, metadataCheckInterval, topicPrefix, logLevel, maxRecordBytes, maxOutputBytes,
        maxStateBytes, poisonAttempts, stallUnits, crashDrill, stateImages, kafkaPassThrough,
    ]
}


extension WorkerSettings {
    /// The settings from `environment`, with `WorkerEnvironment`'s defaults; a clear error naming
    /// the variable for a value that does not parse.
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
        let bootstrapServers = value(WorkerEnvironment.bootstrapServers) ?? "127.0.0.1:9092"
        let groupId = Self.groupId(
            of: worker, configured: value(WorkerEnvironment.groupId), topicPrefix: value(WorkerEnvironment.topicPrefix) ?? "")
        let instanceId = value(WorkerEnvironment.instanceId) ?? environment["POD_NAME"]
        let batchMaxRecords = try positiveInt(WorkerEnvironment.batchMaxRecords)
        let laneBufferBytes = try positiveInt(WorkerEnvironment.laneBufferBytes)
        let guaranteeText = value(WorkerEnvironment.guarantee) ?? ""
        guard let guarantee = DeliveryGuarantee(rawValue: guaranteeText) else {
            throw SettingsError("FLEET_GUARANTEE must be exactly_once or at_least_once, got '\(guaranteeText)'")
        }
        let commitInterval: Duration = .milliseconds(try positiveInt(WorkerEnvironment.commitInterval))
        let tick = try nonNegativeInt(WorkerEnvironment.tickInterval)
        let tickInterval: Duration? = tick == 0 ? nil : .milliseconds(tick)
        let port = try nonNegativeInt(WorkerEnvironment.httpPort)
        guard port <= 65_535 else { throw SettingsError("FLEET_HTTP_PORT must be at most 65535, got '\(port)'") }
        let httpHost = value(WorkerEnvironment.httpHost) ?? "0.0.0.0"
        let profile = value(WorkerEnvironment.profile) ?? "rin"
        let metadataCheckInterval: Duration = .milliseconds(try positiveInt(WorkerEnvironment.metadataCheckInterval))
        let logLevel = value(WorkerEnvironment.logLevel) ?? "info"
        let topics = TopicNamespace(prefix: value(WorkerEnvironment.topicPrefix) ?? "")
        let kafkaPassThrough = KafkaConfiguration.fromEnvironment(environment)
        let limits = try Self.limits(environment: environment)
        let poisonAttempts = try positiveInt(WorkerEnvironment.poisonAttempts)
        let stallUnits = try positiveInt(WorkerEnvironment.stallUnits)
        let crashDrillAfterUnits: Int? = value(WorkerEnvironment.crashDrill) == nil ? nil : try positiveInt(WorkerEnvironment.crashDrill)
        let imagesText = value(WorkerEnvironment.stateImages) ?? ""
        guard let stateImages = StateImageEncoding(rawValue: imagesText) else {
            throw SettingsError("FLEET_STATE_IMAGES must be binary or json, got '\(imagesText)'")
        }
        self.init(
            worker: worker, bootstrapServers: bootstrapServers, groupId: groupId, instanceId: instanceId,
            batchMaxRecords: batchMaxRecords, guarantee: guarantee, commitInterval: commitInterval, tickInterval: tickInterval,
            httpPort: port, httpHost: httpHost, profile: profile, metadataCheckInterval: metadataCheckInterval,
            logLevel: logLevel, topics: topics, kafkaPassThrough: kafkaPassThrough, limits: limits,
            poisonAttempts: poisonAttempts, stallUnits: stallUnits, crashDrillAfterUnits: crashDrillAfterUnits,
            stateImages: stateImages, laneBufferBytes: laneBufferBytes)
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
}
