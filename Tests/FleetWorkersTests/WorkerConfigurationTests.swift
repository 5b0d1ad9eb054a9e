import FleetModel
import FleetService
import FleetWorkers
import Foundation
import Testing

@Suite("Worker settings, topic checks and namespaces")
struct WorkerConfigurationTests {
    @Test("settings come from the environment with documented defaults")
    func defaults() throws {
        let settings = try WorkerSettings(worker: .delivery, environment: [:])
        #expect(settings.bootstrapServers == "127.0.0.1:9092")
        #expect(settings.groupId == "delivery-worker")
        #expect(settings.instanceId == nil)
        #expect(settings.batchMaxRecords == 1000)
        #expect(settings.laneBufferBytes == 4 << 20)
        #expect(try WorkerSettings(worker: .delivery, environment: ["FLEET_LANE_BUFFER_BYTES": "65536"]).laneBufferBytes == 65_536)
        #expect(throws: SettingsError.self) { try WorkerSettings(worker: .delivery, environment: ["FLEET_LANE_BUFFER_BYTES": "0"]) }
        #expect(settings.topics.prefix == "")
        // Fleets under different prefixes never share a consumer group.
        #expect(try WorkerSettings(worker: .sync, environment: ["FLEET_TOPIC_PREFIX": "staging."]).groupId == "staging.sync-worker")
        let pod = try WorkerSettings(worker: .access, environment: ["POD_NAME": "access-worker-2"])
        #expect(pod.instanceId == "access-worker-2")
        #expect(pod.consumerConfiguration["group.instance.id"] == "access-worker-2")
    }

    @Test("KAFKA_* variables pass through to librdkafka, after our own settings")
    func passThrough() throws {
        let settings = try WorkerSettings(worker: .delivery, environment: [
            "FLEET_BOOTSTRAP_SERVERS": "broker:9093", "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "KAFKA_SASL_MECHANISMS": "SCRAM-SHA-512",
        ])
        #expect(settings.consumerConfiguration["security.protocol"] == "SASL_SSL")
        #expect(settings.producerConfiguration["sasl.mechanisms"] == "SCRAM-SHA-512")
        #expect(settings.producerConfiguration["bootstrap.servers"] == "broker:9093")
        #expect(settings.consumerConfiguration["group.id"] == "delivery-worker")
        // Each client gets only its role's properties: no CONFWARN for the other role's.
        let roles = try WorkerSettings(worker: .delivery, environment: [
            "KAFKA_SESSION_TIMEOUT_MS": "2000", "KAFKA_LINGER_MS": "20", "KAFKA_SECURITY_PROTOCOL": "SSL",
        ])
        #expect(roles.consumerConfiguration["session.timeout.ms"] == "2000")
        #expect(roles.producerConfiguration["session.timeout.ms"] == nil)
        #expect(roles.runtimeProducerConfiguration["linger.ms"] == "20")
        #expect(roles.runtimeConsumerConfiguration["linger.ms"] == nil)
        #expect(roles.producerConfiguration["security.protocol"] == "SSL" && roles.consumerConfiguration["security.protocol"] == "SSL")
    }

    @Test("a bad number is refused with the variable's name")
    func badNumber() {
        #expect(throws: SettingsError.self) { try WorkerSettings(worker: .delivery, environment: ["FLEET_BATCH_MAX_RECORDS": "lots"]) }
        do {
            _ = try WorkerSettings(worker: .delivery, environment: ["FLEET_BATCH_MAX_RECORDS": "0"])
        } catch {
            #expect(error.description == "FLEET_BATCH_MAX_RECORDS must be a positive integer, got '0'")
        }
    }

    @Test("topics check names missing topics and co-partitioning mismatches")
    func topicCheck() {
        var counts = Dictionary(uniqueKeysWithValues: TopicSpec.all.map { ("staging." + $0.name, 8) })
        let namespace = TopicNamespace(prefix: "staging.")
        #expect(TopicAdministration.check(partitionCounts: counts, namespace: namespace).isEmpty)
        counts["staging.delivery-worker.state"] = 4
        counts["staging.rin.reminders"] = nil
        #expect(TopicAdministration.check(partitionCounts: counts, namespace: namespace).map(\.description) == [
            "missing topic staging.rin.reminders",
            "delivery-worker: topics are not co-partitioned: staging.rin.app.activity=8, staging.rin.delivery.inbox=8, staging.delivery-worker.state=4, staging.delivery-worker.history=8",
        ])
        // Topics outside the namespace are not the fleet's.
        #expect(TopicAdministration.check(partitionCounts: counts, namespace: TopicNamespace()).count == TopicSpec.all.count)
    }

    @Test("topics check after a migration checks the generation the worker runs on")
    func topicCheckGenerations() {
        var counts = Dictionary(uniqueKeysWithValues: TopicSpec.all.map { ("staging." + $0.name, 4) })
        let namespace = TopicNamespace(prefix: "staging.")
        let migrated = GenerationMap(entries: [.delivery: GenerationEntry(worker: .delivery, generation: 2, partitions: 8, phase: .active)])
        let second = Worker.delivery.topics(generation: 2)
        #expect(TopicAdministration.check(partitionCounts: counts, namespace: namespace, generations: migrated).map(\.description) == [
            "missing topic staging.rin.delivery.inbox.g2 (delivery-worker generation 2)",
            "missing topic staging.delivery-worker.state.g2 (delivery-worker generation 2)",
            "missing topic staging.delivery-worker.history.g2 (delivery-worker generation 2)",
            "missing topic staging.rin.delivery.inbox.g2.dlq (delivery-worker generation 2)",
        ])
        for name in second.all { counts["staging." + name] = 8 }
        #expect(TopicAdministration.check(partitionCounts: counts, namespace: namespace, generations: migrated).isEmpty)
        counts["staging." + second.history] = 4
        #expect(TopicAdministration.check(partitionCounts: counts, namespace: namespace, generations: migrated).map(\.description) == [
            "delivery-worker (generation 2): topics are not co-partitioned: staging.rin.delivery.inbox.g2=8, staging.delivery-worker.state.g2=8, staging.delivery-worker.history.g2=4",
        ])
    }

    @Test("the namespace maps logical names to physical ones and back")
    func namespace() {
        let namespace = TopicNamespace(prefix: "t1.")
        #expect(namespace.physical(Topics.deliveryInbox) == "t1.rin.delivery.inbox")
        #expect(namespace.logical("t1.rin.delivery.inbox") == Topics.deliveryInbox)
        #expect(namespace.logical("t2.rin.delivery.inbox") == nil)
    }

    @Test("every variable a worker reads is in the README's table")
    func documented() throws {
        let readme = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        for variable in WorkerEnvironment.all {
            #expect(text.contains("| `\(variable.name)` |"), "README lacks \(variable.name)")
        }
    }
}
