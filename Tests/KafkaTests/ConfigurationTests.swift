import Kafka
import Testing

struct ConfigurationTests {
    @Test func environmentVariablesWithKafkaPrefixBecomeProperties() {
        let configuration = KafkaConfiguration.fromEnvironment([
            "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "KAFKA_SASL_MECHANISMS": "SCRAM-SHA-512",
            "KAFKA_SSL_CA_LOCATION": "/etc/ssl/ca.pem",
            "KAFKA_BOOTSTRAP_SERVERS": "kafka-0:9092,kafka-1:9092",
            "KAFKA_": "ignored",
            "PATH": "/usr/bin",
            "FLEET_KAFKA_BOOTSTRAP": "not ours",
        ])
        #expect(configuration.properties == [
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "ssl.ca.location": "/etc/ssl/ca.pem",
            "bootstrap.servers": "kafka-0:9092,kafka-1:9092",
        ])
        #expect(configuration.bootstrapServers == "kafka-0:9092,kafka-1:9092")
    }

    @Test func typedFieldsAreViewsOverProperties() {
        var configuration = KafkaConfiguration(bootstrapServers: "b:9092")
        configuration.groupId = "g"
        configuration.sessionTimeoutMs = 2000
        configuration.assignmentStrategy = .cooperativeSticky
        configuration.isolationLevel = .readCommitted
        configuration.enableAutoCommit = false
        #expect(configuration.properties == [
            "bootstrap.servers": "b:9092", "group.id": "g", "session.timeout.ms": "2000",
            "partition.assignment.strategy": "cooperative-sticky", "isolation.level": "read_committed",
            "enable.auto.commit": "false",
        ])
        let merged = configuration.merging(KafkaConfiguration(properties: ["group.id": "h", "linger.ms": "5"]))
        #expect(merged.groupId == "h")
        #expect(merged.lingerMs == 5)
    }

    /// Pass-through reaches librdkafka: it validates names and values when a client is created.
    @Test func passedThroughPropertiesAreAppliedByLibrdkafka() throws {
        let valid = KafkaConfiguration.fromEnvironment(["KAFKA_SECURITY_PROTOCOL": "plaintext", "KAFKA_CLIENT_ID": "t"])
        _ = try KafkaProducer(configuration: valid.merging(KafkaConfiguration(bootstrapServers: "127.0.0.1:1")), logger: .tests)

        let badValue = KafkaConfiguration.fromEnvironment(["KAFKA_SECURITY_PROTOCOL": "carrier_pigeon"])
        let error = #expect(throws: KafkaError.self) { try KafkaProducer(configuration: badValue, logger: .tests) }
        #expect(error?.message.contains("security.protocol") == true)

        let unknown = KafkaConfiguration(properties: ["group.id": "g", "no.such.property": "1"])
        #expect(throws: KafkaError.self) { try KafkaConsumer(configuration: unknown, logger: .tests) }
    }

    @Test func producerDefaultsToJavaCompatiblePartitioningAndIdempotence() {
        #expect(KafkaProducer.defaultProperties["partitioner"] == "murmur2_random")
        #expect(KafkaProducer.defaultProperties["enable.idempotence"] == "true")
        #expect(KafkaConsumer.defaultProperties["enable.auto.commit"] == "false")
    }
}
