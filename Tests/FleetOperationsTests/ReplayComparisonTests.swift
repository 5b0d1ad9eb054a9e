import FleetOperations
import Kafka
import Testing

@Suite struct ReplayComparisonTests {
    func record(_ id: String, _ value: String, user: String = "maya", timestamp: Int64? = 1000, topic: String = "rin.notify.decisions") -> ComparedRecord {
        ComparedRecord(topic: topic, key: id, userId: user, value: Array(value.utf8), headers: [], timestamp: timestamp)
    }

    @Test("the same records, with at-least-once copies on the recorded side, are identical")
    func copiesAreIdentical() {
        let a = record("x:0:1:0", #"{"a":1}"#), b = record("x:0:1:1", #"{"b":2}"#)
        let comparison = ReplayComparison(recorded: [a, b, a], replayed: [b, a])
        #expect(comparison.isIdentical)
        #expect(comparison.compared == 2)
        #expect(comparison.render() == "identical (2 records compared)")
    }

    @Test("missing, extra and changed records are each listed with both values")
    func differencesAreListed() {
        let kept = record("x:0:1:0", #"{"a":1}"#)
        let comparison = ReplayComparison(
            recorded: [kept, record("x:0:1:1", #"{"outcome":"delivered"}"#), record("x:0:2:0", #"{"gone":true}"#)],
            replayed: [kept, record("x:0:1:1", #"{"outcome":"suppressed"}"#), record("x:0:3:0", #"{"new":true}"#)])
        #expect(!comparison.isIdentical)
        #expect(comparison.differences.count == 3)
        let text = comparison.render()
        #expect(text.contains(#"changed  rin.notify.decisions x:0:1:1"#))
        #expect(text.contains(#"  recorded: {"outcome":"delivered"}"#))
        #expect(text.contains(#"  replayed: {"outcome":"suppressed"}"#))
        #expect(text.contains("missing  rin.notify.decisions x:0:2:0"))
        #expect(text.contains("extra    rin.notify.decisions x:0:3:0"))
    }

    @Test("a timestamp the broker set is not compared; one the worker set is, and so are key and headers")
    func timestampsKeysAndHeaders() {
        let brokerStamped = record("x:0:1:0", "{}", timestamp: nil)
        #expect(ReplayComparison(recorded: [brokerStamped], replayed: [record("x:0:1:0", "{}", timestamp: 5)]).isIdentical)
        #expect(!ReplayComparison(recorded: [record("x:0:1:0", "{}", timestamp: 4)], replayed: [record("x:0:1:0", "{}", timestamp: 5)]).isIdentical)
        #expect(!ReplayComparison(recorded: [record("x:0:1:0", "{}", user: "a")], replayed: [record("x:0:1:0", "{}", user: "b")]).isIdentical)
        var withHeader = record("x:0:1:0", "{}")
        withHeader.headers = [KafkaHeader("source-index", "0")]
        let comparison = ReplayComparison(recorded: [withHeader], replayed: [record("x:0:1:0", "{}")])
        #expect(!comparison.isIdentical)
        #expect(comparison.render().contains("headers=[source-index=0]"))
    }

    @Test("two different recorded records with one id are a conflict, even when the replay matches one of them")
    func recordedConflicts() {
        let first = record("x:0:1:0", #"{"v":1}"#), second = record("x:0:1:0", #"{"v":2}"#)
        let comparison = ReplayComparison(recorded: [first, second], replayed: [first])
        #expect(comparison.differences == [.conflict(side: "recorded", first: first, second: second)])
    }
}
