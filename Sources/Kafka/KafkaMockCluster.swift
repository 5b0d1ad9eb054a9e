import CRdKafka
public import Logging

/// librdkafka's in-process mock Kafka cluster, for tests of client behaviour that need no
/// external broker (fault injection, features the test broker lacks).
///
/// Limits in librdkafka 2.0.2: no CreateTopics request (use `createTopic`), transactional offset
/// commits are not stored, and `read_committed` readers see data of open transactions.
public final class KafkaMockCluster: Sendable {
    private let handle: RdKafkaHandle
    private let cluster: RdKafkaHandle
    /// The handle's opaque; outlives it.
    private let context: ClientContext

    /// The cluster's bootstrap address for clients' `bootstrapServers`.
    public let bootstrapServers: String

    /// `logger` gets librdkafka's lines about the cluster.
    public init(brokers: Int32 = 1, logger: Logger) throws(KafkaError) {
        let context = ClientContext(logger: logger)
        let conf = try makeRdKafkaConf(["log_level": "3"], context: context)
        let raw = try makeRdKafkaHandle(RD_KAFKA_PRODUCER, conf: conf)
        guard let mock = rd_kafka_mock_cluster_new(raw, brokers) else {
            rd_kafka_destroy(raw)
            throw KafkaError(RD_KAFKA_RESP_ERR__FAIL, detail: "could not create the mock cluster")
        }
        handle = RdKafkaHandle(raw: raw)
        cluster = RdKafkaHandle(raw: mock)
        self.context = context
        bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(mock))
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster.raw)
        rd_kafka_destroy(handle.raw)
    }

    /// Creates a topic directly in the mock cluster.
    public func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32 = 1) throws(KafkaError) {
        try KafkaError.check(rd_kafka_mock_topic_create(cluster.raw, name, partitions, replicationFactor), "mock topic \(name)")
    }
}
