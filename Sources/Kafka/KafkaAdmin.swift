import CRdKafka
public import Logging
import Synchronization

/// A topic to create.
public struct NewTopic: Sendable, Hashable {
    public var name: String
    public var partitions: Int32
    /// -1 lets the broker choose (`default.replication.factor`).
    public var replicationFactor: Int32
    /// Topic configs, e.g. `cleanup.policy=compact`, `retention.ms`, `message.timestamp.type`.
    public var configs: [String: String]

    public init(name: String, partitions: Int32, replicationFactor: Int32 = -1, configs: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.configs = configs
    }
}

/// Topic and group administration. Every call blocks on its own thread, never on the Swift pool.
public final class KafkaAdmin: Sendable {
    private let handle: RdKafkaHandle
    /// What librdkafka's error callback last said about the connection (reached through the
    /// handle's opaque; released after the handle is destroyed, in `deinit`).
    private let connection: ConnectionErrors

    /// The admin client is a producer-type handle: properties only consumers read are dropped
    /// (one configuration can serve every client of a tool without warnings).
    /// `logger` gets librdkafka's lines about the client.
    public init(configuration: KafkaConfiguration, logger: Logger) throws(KafkaError) {
        let connection = ConnectionErrors(logger: logger)
        let conf = try makeRdKafkaConf(configuration.forProducer.properties, context: connection)
        // Called on librdkafka's threads: the box only takes a lock.
        rd_kafka_conf_set_error_cb(conf) { _, err, reason, opaque in
            guard let opaque else { return }
            let text = reason.map { String(cString: $0) } ?? ""
            Unmanaged<ConnectionErrors>.fromOpaque(opaque).takeUnretainedValue().record(err, reason: text)
        }
        handle = RdKafkaHandle(raw: try makeRdKafkaHandle(RD_KAFKA_PRODUCER, conf: conf))
        self.connection = connection
    }

    deinit {
        rd_kafka_destroy(handle.raw)
    }

    /// Creates topics. With `ignoreExisting`, a topic that already exists is not an error
    /// (its partition count and configs are left as they are — check them with `partitionCounts`).
    /// - Throws: the first per-topic failure.
    public func createTopics(_ topics: [NewTopic], ignoreExisting: Bool = false, timeout: Duration = .seconds(30)) async throws(KafkaError) {
        guard !topics.isEmpty else { return }
        let handle = handle
        try await runBlocking("create-topics") { () throws(KafkaError) in
            var errstr = [CChar](repeating: 0, count: 512)
            var newTopics: [OpaquePointer?] = []
            defer { for topic in newTopics { rd_kafka_NewTopic_destroy(topic) } }
            for topic in topics {
                guard let newTopic = rd_kafka_NewTopic_new(topic.name, topic.partitions, topic.replicationFactor, &errstr, errstr.count) else {
                    throw KafkaError.invalidArgument("topic \(topic.name): \(errorText(errstr))")
                }
                newTopics.append(newTopic)
                for (name, value) in topic.configs.sorted(by: { $0.key < $1.key }) {
                    try KafkaError.check(rd_kafka_NewTopic_set_config(newTopic, name, value), "topic \(topic.name) config \(name)")
                }
            }
            let result = try Self.runAdminRequest(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout: timeout) { options, queue in
                rd_kafka_CreateTopics(handle.raw, &newTopics, newTopics.count, options, queue)
            }
            defer { rd_kafka_event_destroy(result) }
            var count = 0
            let results = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(result), &count)
            try Self.checkTopicResults(results, count: count, ignoring: ignoreExisting ? RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS : nil)
        }
    }

    /// Deletes topics. With `ignoreMissing`, a topic that does not exist is not an error.
    public func deleteTopics(_ names: [String], ignoreMissing: Bool = true, timeout: Duration = .seconds(30)) async throws(KafkaError) {
        guard !names.isEmpty else { return }
        let handle = handle
        try await runBlocking("delete-topics") { () throws(KafkaError) in
            var deletions: [OpaquePointer?] = names.map { rd_kafka_DeleteTopic_new($0) }
            defer { for deletion in deletions { rd_kafka_DeleteTopic_destroy(deletion) } }
            let result = try Self.runAdminRequest(handle, RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout: timeout) { options, queue in
                rd_kafka_DeleteTopics(handle.raw, &deletions, deletions.count, options, queue)
            }
            defer { rd_kafka_event_destroy(result) }
            var count = 0
            let results = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(result), &count)
            try Self.checkTopicResults(results, count: count, ignoring: ignoreMissing ? RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART : nil)
        }
    }

    /// Partition count per existing topic, from cluster metadata. `topics == nil` lists every topic;
    /// named topics that do not exist are absent from the result (never auto-created by this call).
    ///
    /// - Parameter failFast: with a duration, give up as soon as that long has passed and
    ///   librdkafka has reported every broker down (connection refused, name not resolved)
    ///   instead of waiting out `timeout`: an operator's tool says "cannot reach" in seconds,
    ///   while a broker that answers slowly still gets the whole `timeout`. The error then
    ///   carries librdkafka's reason, which names the address it tried.
    public func partitionCounts(
        topics: [String]? = nil, timeout: Duration = .seconds(10), failFast: Duration? = nil
    ) async throws(KafkaError) -> [String: Int] {
        let handle = handle
        let connection = connection
        return try await runBlocking("metadata") { () throws(KafkaError) in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let clock = ContinuousClock()
            let start = clock.now
            // One request per second at most, so an all-brokers-down report is seen between them.
            while true {
                let remaining = timeout - (clock.now - start)
                let attempt = failFast == nil ? remaining : min(remaining, .seconds(1))
                let err = rd_kafka_metadata(handle.raw, 1, nil, &metadata, milliseconds(max(attempt, .milliseconds(1))))
                if err == RD_KAFKA_RESP_ERR_NO_ERROR { break }
                // librdkafka hands error events to error_cb only from a poll.
                rd_kafka_poll(handle.raw, 0)
                let elapsed = clock.now - start
                if let failFast, elapsed >= failFast, let down = connection.unreachable() { throw down }
                if failFast == nil || elapsed >= timeout {
                    if failFast != nil, let down = connection.unreachable() { throw down }
                    throw KafkaError(err, detail: "metadata: \(String(cString: rd_kafka_err2str(err)))")
                }
            }
            guard let metadata else { return [:] }
            defer { rd_kafka_metadata_destroy(metadata) }
            let wanted = topics.map(Set.init)
            var counts: [String: Int] = [:]
            for topic in UnsafeBufferPointer(start: metadata.pointee.topics, count: Int(metadata.pointee.topic_cnt)) {
                let name = String(cString: topic.topic)
                guard topic.err == RD_KAFKA_RESP_ERR_NO_ERROR, wanted?.contains(name) ?? true else { continue }
                counts[name] = Int(topic.partition_cnt)
            }
            return counts
        }
    }

    /// The consumer groups the cluster knows.
    public func listGroups(timeout: Duration = .seconds(10)) async throws(KafkaError) -> [String] {
        let handle = handle
        return try await runBlocking("list-groups") { () throws(KafkaError) in
            var list: UnsafePointer<rd_kafka_group_list>?
            try KafkaError.check(rd_kafka_list_groups(handle.raw, nil, &list, milliseconds(timeout)), "list groups")
            guard let list else { return [] }
            defer { rd_kafka_group_list_destroy(list) }
            return UnsafeBufferPointer(start: list.pointee.groups, count: Int(list.pointee.group_cnt))
                .map { String(cString: $0.group) }
                .sorted()
        }
    }

    /// Sends one admin request and waits (on the calling, dedicated thread) for its result event,
    /// which the caller owns and destroys.
    private static func runAdminRequest(_ handle: RdKafkaHandle, _ op: rd_kafka_admin_op_t, timeout: Duration,
                                        _ send: (OpaquePointer?, OpaquePointer?) -> Void) throws(KafkaError) -> OpaquePointer {
        let queue = rd_kafka_queue_new(handle.raw)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(handle.raw, op)
        defer { rd_kafka_AdminOptions_destroy(options) }
        var errstr = [CChar](repeating: 0, count: 512)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, milliseconds(timeout), &errstr, errstr.count)
        _ = rd_kafka_AdminOptions_set_request_timeout(options, milliseconds(timeout), &errstr, errstr.count)
        send(options, queue)
        guard let event = rd_kafka_queue_poll(queue, milliseconds(timeout) + 5000) else {
            throw KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, detail: "admin request timed out")
        }
        let err = rd_kafka_event_error(event)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let detail = String(cString: rd_kafka_event_error_string(event))
            rd_kafka_event_destroy(event)
            throw KafkaError(err, detail: detail)
        }
        return event
    }

    private static func checkTopicResults(_ results: UnsafeMutablePointer<OpaquePointer?>?, count: Int,
                                          ignoring ignored: rd_kafka_resp_err_t?) throws(KafkaError) {
        guard let results else { return }
        for result in UnsafeBufferPointer(start: results, count: count) {
            let err = rd_kafka_topic_result_error(result)
            if err == RD_KAFKA_RESP_ERR_NO_ERROR || err == ignored { continue }
            let name = String(cString: rd_kafka_topic_result_name(result))
            let detail = rd_kafka_topic_result_error_string(result).map { String(cString: $0) } ?? String(cString: rd_kafka_err2str(err))
            throw KafkaError(err, detail: "topic \(name): \(detail)")
        }
    }
}

/// The connection errors librdkafka reported for one client (its `error_cb`), for `failFast`.
final class ConnectionErrors: ClientContext, @unchecked Sendable {  // its state is behind a mutex
    private let latest = Mutex<(allDown: Bool, reason: String?)>((false, nil))

    /// From librdkafka's threads.
    func record(_ code: Int32, reason: String) {
        let err = rd_kafka_resp_err_t(code)
        latest.withLock { state in
            switch err {
            case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
                state.allDown = true
            case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__RESOLVE, RD_KAFKA_RESP_ERR__AUTHENTICATION,
                 RD_KAFKA_RESP_ERR__SSL:
                state.reason = reason
            default:
                break
            }
        }
    }

    /// An error saying no broker could be reached and why (librdkafka's last connection error,
    /// which names the address); nil while some broker may still answer.
    func unreachable() -> KafkaError? {
        let (allDown, reason) = latest.withLock { ($0.allDown, $0.reason) }
        guard allDown || reason != nil else { return nil }
        return KafkaError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, detail: reason ?? "all brokers are down")
    }
}
