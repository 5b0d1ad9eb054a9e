import FleetModel

/// What a lane wrote since it last told the observer, counted by the lane alone and reported
/// once per batch it folds.
///
/// Reporting each output as it was written took the observer's lock once per output, decision
/// and delivery, from every lane at once (`WorkerMetrics` finds a label set's handle under
/// one lock), and hashed the labels there. A lane writes to a handful of topics with a bounded
/// set of decision and delivery labels, whose strings are mostly the processor's constants, so
/// a short list compared with `==` (identical strings compare without reading their bytes)
/// counts them without hashing.
struct OutputTally {
    private struct DecisionCount {
        var outcome: DecisionOutcome
        var reason: String?
        var rule: String
        var count: Int
    }

    private struct DeliveryCount {
        var category: String
        var channel: DeliveryChannel
        var count: Int
    }

    private var outputs: [(topic: String, count: Int)] = []
    private var decisions: [DecisionCount] = []
    private var deliveries: [DeliveryCount] = []
    /// Past this many label sets in a list (a processor naming topics from its input), the
    /// tally reports at once rather than search a long list for every output.
    private static var maxEntries: Int { 32 }

    /// One output to `output.topic` (logical name); a decision or delivery is also counted under
    /// its labels.
    mutating func count(_ output: OutputRecord, observer: (any RuntimeObserver)?) {
        guard observer != nil else { return }
        if outputs.count >= Self.maxEntries || decisions.count >= Self.maxEntries || deliveries.count >= Self.maxEntries {
            report(to: observer)
        }
        countOutput(to: output.topic)
        switch output.record {
        case .decision(let decision): count(decision)
        case .delivery(let delivery): count(delivery)
        default: break
        }
    }

    /// Tells `observer` everything counted and starts counting afresh.
    mutating func report(to observer: (any RuntimeObserver)?) {
        guard let observer, !outputs.isEmpty else { return }
        for (topic, count) in outputs { observer.recordOut(topic: topic, count: count) }
        for decision in decisions {
            observer.decision(outcome: decision.outcome, reason: decision.reason, rule: decision.rule, count: decision.count)
        }
        for delivery in deliveries { observer.delivery(category: delivery.category, channel: delivery.channel, count: delivery.count) }
        outputs.removeAll(keepingCapacity: true)
        decisions.removeAll(keepingCapacity: true)
        deliveries.removeAll(keepingCapacity: true)
    }

    private mutating func countOutput(to topic: String) {
        for index in outputs.indices where outputs[index].topic == topic {
            outputs[index].count += 1
            return
        }
        outputs.append((topic, 1))
    }

    private mutating func count(_ decision: Decision) {
        for index in decisions.indices
        where decisions[index].rule == decision.rule && decisions[index].outcome == decision.outcome
            && decisions[index].reason == decision.reason {
            decisions[index].count += 1
            return
        }
        decisions.append(DecisionCount(outcome: decision.outcome, reason: decision.reason, rule: decision.rule, count: 1))
    }

    private mutating func count(_ delivery: Delivery) {
        for index in deliveries.indices
        where deliveries[index].channel == delivery.channel && deliveries[index].category == delivery.category {
            deliveries[index].count += 1
            return
        }
        deliveries.append(DeliveryCount(category: delivery.category, channel: delivery.channel, count: 1))
    }
}
