import DeliveryPolicy
import FleetModel
import Testing

/// The checks every fault test ends with: the delivery worker's output equals the fault-free
/// fold of the same inbox log, record for record and byte for byte, and every intent has
/// exactly one decision (P-IDEM-1).
extension FleetHarness {
    /// The four topics only the delivery worker writes.
    static let deliveryOutputs = [Topics.decisions, Topics.deliveries, Topics.sections, Topics.retentionEvents]

    /// The reference for the first `count` records of the inbox (all of it once the stream is
    /// complete).
    func reference(inboxRecords count: Int, engine: DeliveryEngine) async throws -> ReferenceOutputs {
        let reference = try ReferenceOutputs(log: try await inboxLog(count: count), engine: engine)
        try #require(reference.deadLetters == 0, "the workload must be valid input")
        return reference
    }

    /// Waits until every decision the reference made is on the decisions topic.
    func awaitDecisions(of reference: ReferenceOutputs, timeout: Duration = .seconds(60)) async throws {
        let expected = Set(reference.byTopic[Topics.decisions, default: [:]].keys)
        let found = try await outputs(Topics.decisions, expecting: expected, timeout: timeout)
        let missing = expected.subtracting(found.keys)
        try #require(missing.isEmpty, "\(missing.count) of \(expected.count) decisions did not arrive within \(timeout), e.g. \(missing.sorted().prefix(3))")
    }

    /// Compares the four output topics with the reference; returns the decisions written.
    @discardableResult
    func expectOutputs(equal reference: ReferenceOutputs, intents: Set<String>, timeout: Duration = .seconds(90)) async throws -> [Decision] {
        var decisions: [Decision] = []
        for topic in Self.deliveryOutputs {
            let expected = reference.byTopic[topic, default: [:]]
            let found = try await outputs(topic, expecting: Set(expected.keys), timeout: expected.isEmpty ? .seconds(2) : timeout)
            let missing = Set(expected.keys).subtracting(found.keys).sorted()
            let extra = Set(found.keys).subtracting(expected.keys).sorted()
            let differing = expected.keys.filter { found[$0] != nil && found[$0] != expected[$0] }.sorted()
            #expect(missing.isEmpty, "\(topic): \(missing.count) of \(expected.count) records missing, e.g. \(missing.prefix(3))")
            #expect(extra.isEmpty, "\(topic): \(extra.count) records the fault-free run does not write, e.g. \(extra.prefix(3))")
            for id in differing.prefix(3) {
                Issue.record("""
                    \(topic): \(id) differs from the fault-free run (\(differing.count) differ):
                    expected \(String(decoding: expected[id] ?? [], as: UTF8.self))
                    found    \(String(decoding: found[id] ?? [], as: UTF8.self))
                    """)
            }
            if topic == Topics.decisions {
                decisions = found.values.compactMap { bytes in
                    if case .decision(let decision)? = try? RecordCodec.decode(bytes) { decision } else { nil }
                }
            }
        }
        // P-IDEM-1: one decision per intent, whatever was repeated (engine-made notifications'
        // decisions, `kind` and no `intent_id`, were compared with the fault-free run above).
        var perIntent: [String: [Decision]] = [:]
        for decision in decisions { if let intentId = decision.intentId { perIntent[intentId, default: []].append(decision) } }
        let repeated = perIntent.filter { $0.value.count > 1 }.keys.sorted()
        #expect(repeated.isEmpty, "intents with more than one decision: \(repeated.prefix(5))")
        #expect(Set(perIntent.keys) == intents, "intents without a decision: \(intents.subtracting(perIntent.keys).sorted().prefix(5))")
        return decisions
    }
}
