import FleetModel
import Testing

/// Generation-suffixed topic names (partition migration): the names, and that a later
/// generation's log accepts exactly what the first one does.
struct TopicGenerationTests {
    @Test("generation 1 is the plain name; later ones append .g<n>, and the base is recovered")
    func names() {
        #expect(Topics.named(Topics.deliveryInbox, generation: 1) == "rin.delivery.inbox")
        #expect(Worker.delivery.topics(generation: 2) == GenerationTopics(
            log: "rin.delivery.inbox.g2", state: "delivery-worker.state.g2", history: "delivery-worker.history.g2"))
        #expect(Worker.delivery.topics(generation: 2).logDeadLetter == "rin.delivery.inbox.g2.dlq")
        #expect(Topics.generationBase(of: "rin.delivery.inbox.g12") == ("rin.delivery.inbox", 12))
        #expect(Topics.generationBase(of: "rin.delivery.inbox") == ("rin.delivery.inbox", 1))
        #expect(Topics.generationBase(of: "rin.delivery.inbox.g2.dlq") == ("rin.delivery.inbox.g2.dlq", 1))
        #expect(Topics.generationBase(of: "x.gold") == ("x.gold", 1))
        #expect(Topics.generationBase(of: "x.g1") == ("x.g1", 1))
    }

    /// `generationBase` reads UTF-8 bytes for speed; it answers what the `Character`-based
    /// reading it replaced answers, on every suffix shape: signs, empty numbers, non-ASCII
    /// digits, combining marks after the dot, several dots.
    @Test("generationBase on bytes answers as the Character-based reading does")
    func generationBaseMatchesTheCharacterReading() {
        func reference(_ topic: String) -> (base: String, generation: Int) {
            guard let dot = topic.lastIndex(of: "."), topic[topic.index(after: dot)...].first == "g",
                  let generation = Int(topic[topic.index(dot, offsetBy: 2)...]), generation >= 2,
                  topic[topic.index(dot, offsetBy: 2)...].allSatisfy(\.isASCII)
            else { return (topic, 1) }
            return (String(topic[..<dot]), generation)
        }
        let bases = ["", "rin.delivery.inbox", "a", "é.x", "x.", ".", "x..", "x.gé"]
        let suffixes = ["", ".g", ".g2", ".g12", ".g1", ".g0", ".g-3", ".g+5", ".g٣", ".g2x", ".G2", ".gold", ".g2.dlq", ".g\u{301}2",
                        ".\u{301}g2", ".g99999999999999999999", ".g 2"]
        for base in bases {
            for suffix in suffixes {
                let topic = base + suffix
                let (expected, actual) = (reference(topic), Topics.generationBase(of: topic))
                #expect(actual == expected, "\(topic.debugDescription): \(actual) != \(expected)")
            }
        }
    }

    @Test("only workers that own their log can migrate, the sender included; their generation specs copy the first generation's configs")
    func specs() {
        #expect(Worker.allCases.filter(\.ownsItsLog) == [.reminder, .delivery, .sender])
        #expect(Worker.allCases.filter(\.migrates) == [.reminder, .delivery, .sender])
        #expect(Worker.score.whyNotMigrating.contains("directly"))
        #expect(Topics.generationSpecs(of: .sender, generation: 2).map(\.name) == Worker.sender.topics(generation: 2).all)
        #expect(Worker.owner(ofInbox: Topics.senderInbox) == .sender)
        #expect(Worker.owner(ofInbox: Topics.deliveryInbox) == .delivery)
        #expect(Worker.owner(ofInbox: Topics.decisions) == nil)
        let specs = Topics.generationSpecs(of: .delivery, generation: 3)
        #expect(specs.map(\.name) == Worker.delivery.topics(generation: 3).all)
        #expect(specs.first?.configs["message.timestamp.type"] == "LogAppendTime")
        #expect(specs.dropFirst().first?.configs["cleanup.policy"] == "compact")
    }

    @Test("a later generation's log validates record types like the first one")
    func decodingOnGenerations() throws {
        let tick = #"{"v":1,"type":"tick","id":"t","user_id":""}"#
        _ = try RecordCodec.decode(Array(tick.utf8), topic: "rin.delivery.inbox.g2")
        #expect(throws: RecordError.self) {
            _ = try RecordCodec.decode(Array(tick.utf8), topic: "rin.notify.decisions")
        }
    }
}
