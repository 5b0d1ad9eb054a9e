import FleetModel
import FleetOperations
import FleetSimulation
import Kafka
import Testing

@Suite struct SimulationExportTests {
    let topics = WorkerTopics(worker: .delivery)
    let t0 = Timestamp.at("2026-11-21T09:00:00Z")

    func message(_ offset: Int64, _ record: FleetRecord?, raw: String? = nil, at seconds: Int64, headers: [KafkaHeader] = []) -> KafkaMessage {
        KafkaMessage(
            topic: topics.folded, partition: 0, offset: offset, key: record.flatMap { $0.userId.isEmpty ? nil : Array($0.userId.utf8) } ?? Array("maya".utf8),
            value: raw.map { Array($0.utf8) } ?? record.map(RecordCodec.encode), headers: headers,
            timestamp: (t0 + .seconds(seconds)).millisecondsSinceEpoch, timestampType: .createTime)
    }

    var forwarded: [KafkaHeader] {
        [KafkaHeader("source-topic", Topics.appActivity), KafkaHeader("source-partition", "0"), KafkaHeader("source-offset", "7")]
    }

    @Test("forwarded activity goes back to its external topic, the rest to the inbox; times never go back; every line is simulate input")
    func linesAreSimulateInput() throws {
        let log = [
            message(0, .userAction(UserAction(id: "a1", userId: "maya", action: "open")), at: 0, headers: forwarded),
            message(1, .userAction(UserAction(id: "a2", userId: "noor", action: "open")), at: -30),
            message(2, nil, raw: "not json", at: 10),
        ]
        let result = SimulationExport.lines(log, topics: topics, user: nil)
        #expect(result.lines.count == 2)
        #expect(result.skipped.count == 1 && result.skipped[0].hasPrefix("0:2: "))
        let parsed = try result.lines.enumerated().map { try #require(try SimulationInput.parse($0.element, line: $0.offset + 1)) }
        #expect(parsed.map(\.topic) == [Topics.appActivity, Topics.deliveryInbox])
        #expect(parsed.map(\.at) == [t0, t0])
        #expect(parsed.map(\.key) == ["maya", "noor"])
        // The simulator accepts the whole file.
        #expect(throws: Never.self) { try InputReplay.simulate(result.lines.joined(separator: "\n"), profile: FleetProfile(.shipped("rin"))) }
    }

    @Test("one user's export keeps that user's records and closes with a tick at the range's last time")
    func oneUser() throws {
        let log = [
            message(0, .userAction(UserAction(id: "a1", userId: "maya", action: "open")), at: 0),
            message(1, .userAction(UserAction(id: "a2", userId: "noor", action: "open")), at: 60),
        ]
        let result = SimulationExport.lines(log, topics: topics, user: "maya")
        #expect(result.lines.count == 2)
        let tick = try #require(try SimulationInput.parse(result.lines[1], line: 2))
        #expect(tick.topic == Topics.deliveryInbox && tick.at == t0 + .seconds(60) && tick.key == nil)
        #expect(tick.value["type"] == "tick")
        #expect(SimulationExport.lines(Array(log.prefix(1)), topics: topics, user: "maya").lines.count == 1)
    }
}
