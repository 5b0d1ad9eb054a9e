import FleetModel
import FleetTestSupport
import Foundation
import Kafka
import Logging
import ProviderClients
import SenderCore
import SenderEffect
import SenderTestSupport
import Synchronization
import Testing

/// The effect stage on the local broker with the stand-in providers: every attempt gets one
/// committed answer in the inbox, a stage killed between the call and the commit does not send
/// an accepted email twice, and a malformed attempt goes to the dead-letter topic (issue 17).
@Suite(.enabled(if: TestBrokerEnvironment.isAvailable(for: "SenderTests")), .serialized, .timeLimit(.minutes(3)))
struct SendEffectStageTests {
    struct Broker {
        let bootstrap: String
        let attempts: String
        let inbox: String
        let group = "sender-effect-" + UUID().uuidString.prefix(8).lowercased()
        let transactionalId = "sender-effect-tx-" + UUID().uuidString.prefix(8).lowercased()

        static func make() async throws -> Broker {
            let bootstrap = try #require(TestBrokerEnvironment.bootstrap, "FLEET_KAFKA_BOOTSTRAP must be set (scripts/broker start)")
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let broker = Broker(bootstrap: bootstrap, attempts: "sender-attempts-\(suffix)", inbox: "sender-inbox-\(suffix)")
            let admin = try KafkaAdmin(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
            try await admin.createTopics([broker.attempts, broker.inbox, broker.attempts + ".dlq"].map { NewTopic(name: $0, partitions: 2) })
            return broker
        }

        func delete() async {
            let admin = try? KafkaAdmin(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
            try? await admin?.deleteTopics([attempts, inbox, attempts + ".dlq"])
        }

        func consumer(_ group: String) -> KafkaConfiguration {
            var configuration = KafkaConfiguration(bootstrapServers: bootstrap)
            configuration.groupId = group
            configuration.sessionTimeoutMs = 2000
            configuration.heartbeatIntervalMs = 500
            configuration.autoOffsetReset = .earliest
            return configuration
        }

        func producer() -> KafkaConfiguration {
            var configuration = KafkaConfiguration(bootstrapServers: bootstrap)
            configuration.transactionalId = transactionalId
            return configuration
        }

        func stage(_ effect: ProviderEffect, beforeCommit: (@Sendable ([SendResult]) async throws -> Void)? = nil) -> SendEffectStage {
            SendEffectStage(
                consumer: consumer(group), producer: producer(), effect: effect,
                topics: .init(attempts: attempts, inbox: AnswerRoute(inbox)), concurrency: 8, logger: Logger(label: "sender-effect-tests"),
                beforeCommit: beforeCommit)
        }

        func produce(_ records: [(key: String, value: [UInt8])]) async throws {
            let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
            _ = try await producer.send(records.map { ProducerRecord(topic: attempts, key: Array($0.key.utf8), value: $0.value) })
            await producer.close()
        }

        /// The committed records of `topic`, waiting until `count` arrived.
        func read(_ topic: String, count: Int) async throws -> [KafkaMessage] {
            var configuration = consumer("reader-" + UUID().uuidString.prefix(8).lowercased())
            configuration.isolationLevel = .readCommitted
            let reader = try KafkaConsumer(configuration: configuration, logger: .tests)
            try reader.subscribe(topics: [topic])
            let messages = try await reader.collect(count: count, timeout: .seconds(30))
            await reader.close()
            return messages
        }
    }

    static func results(_ messages: [KafkaMessage]) throws -> [SendResult] {
        try messages.map { message in
            guard case .sender(.result(let result)) = try RecordCodec.decode(message.value ?? [], topic: Topics.senderInbox) else {
                throw RecordError("not a result")
            }
            return result
        }
    }

    static func encoded(_ attempt: SendAttempt) -> (key: String, value: [UInt8]) {
        (attempt.userId, RecordCodec.encode(.sender(.attempt(attempt))))
    }

    @Test func everyAttemptGetsOneCommittedAnswerInTheInbox() async throws {
        let broker = try await Broker.make()
        try await ProviderFakes.with { fakes in
            fakes.apns.script("dead", [.unregistered])
            try await broker.produce([
                Self.encoded(ProviderClientTests.attempt(.apns, token: "a1", id: "d1~push~phone~1")),
                Self.encoded(ProviderClientTests.attempt(.apns, token: "dead", id: "d2~push~phone~1")),
                Self.encoded(ProviderClientTests.attempt(.email, token: "alex@example.com", id: "d3~email~mail~1")),
                Self.encoded(ProviderClientTests.attempt(.fcm, token: "f1", id: "d4~push~pixel~1")),
            ])
            let stage = broker.stage(fakes.effect)
            let running = Task { try await stage.run() }
            let results = try Self.results(try await broker.read(broker.inbox, count: 4))
            running.cancel()
            _ = await running.result
            let outcomes = Dictionary(uniqueKeysWithValues: results.map { ($0.attemptId, $0.outcome) })
            #expect(outcomes == [
                "d1~push~phone~1": .accepted, "d2~push~phone~1": .invalidToken, "d3~email~mail~1": .accepted,
                "d4~push~pixel~1": .accepted,
            ])
            #expect(results.count == 4)
        }
        await broker.delete()
    }

    @Test func aStageKilledBetweenTheCallAndTheCommitDoesNotSendTheEmailTwice() async throws {
        let broker = try await Broker.make()
        try await ProviderFakes.with { fakes in
            try await broker.produce([Self.encoded(ProviderClientTests.attempt(.email, token: "alex@example.com", id: "d1~email~mail~1"))])
            struct Killed: Error {}
            let crashed = broker.stage(fakes.effect) { _ in throw Killed() }
            await #expect(throws: Killed.self) { try await crashed.run() }
            #expect(fakes.email.sent.count == 1, "the provider accepted the email before the crash")

            let restarted = broker.stage(fakes.effect)
            let running = Task { try await restarted.run() }
            let results = try Self.results(try await broker.read(broker.inbox, count: 1))
            running.cancel()
            _ = await running.result
            #expect(results.map(\.outcome) == [.accepted])
            #expect(fakes.email.requests == 2, "the restarted stage called again with the same Idempotency-Key")
            #expect(fakes.email.sent.count == 1, "and the provider did not send a second email")
            #expect(results.first?.providerId == fakes.email.sent.first?.id)
        }
        await broker.delete()
    }

    @Test func aMalformedAttemptIsDeadLetteredAndTheRestGoOn() async throws {
        let broker = try await Broker.make()
        try await ProviderFakes.with { fakes in
            try await broker.produce([
                ("u1", Array(#"{"v":1,"type":"send.attempt","id":"x"}"#.utf8)),
                Self.encoded(ProviderClientTests.attempt(.apns, token: "a1", id: "d1~push~phone~1")),
            ])
            let stage = broker.stage(fakes.effect)
            let running = Task { try await stage.run() }
            let dead = try await broker.read(broker.attempts + ".dlq", count: 1)
            let results = try Self.results(try await broker.read(broker.inbox, count: 1))
            running.cancel()
            _ = await running.result
            let error = dead.first?.headers.first { $0.name == "error" }?.value.map { String(decoding: $0, as: UTF8.self) }
            #expect(error == "missing required field 'user_id'")
            #expect(results.map(\.attemptId) == ["d1~push~phone~1"])
        }
        await broker.delete()
    }
}
