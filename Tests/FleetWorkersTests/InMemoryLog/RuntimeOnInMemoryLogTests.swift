import FleetLogTesting
import FleetModel
import FleetService
import FleetWorkers
import Kafka
import Prometheus
import Synchronization
import Testing

/// The runtime's crash and rebalance guarantees, step by step (DESIGN.md principles 3–5), on the
/// in-memory log: the real `WorkerRuntime` folding the delivery engine, killed — or its partitions
/// moved — at every step it takes against the log, then run to the end.
///
/// A step is one call that changes the log or reads the changelog (`InMemoryLog.Step`): a send,
/// a transaction's begin, offsets or commit, an offset commit, a restore read. For k = 1, 2, …
/// the k-th step of the first instance is faulted, until a run ends before reaching k: every
/// step of a whole run, shutdown included, is covered, wherever the unit boundaries fell.
///
/// What must hold after each (P-IDEM-1, P-BUD-1):
/// - exactly-once: the outputs a read_committed reader sees are the uninterrupted run's, byte
///   for byte and in order, per partition;
/// - at-least-once: every output of the uninterrupted run is there and nothing else: copies
///   are exact re-sends;
/// - both: each user's state, as a restore at the committed offsets finds it, is the
///   uninterrupted run's, byte for byte.
@Suite("Runtime on the in-memory log", .serialized)
struct RuntimeOnInMemoryLogTests {
    /// What an uninterrupted run writes.
    struct Reference {
        var ordered: [String: [[InMemoryFleet.RecordBytes]]]
        var distinct: [String: Set<InMemoryFleet.RecordBytes>]
        var states: [String: [UInt8]]
    }

    static func uninterrupted(_ guarantee: DeliveryGuarantee) async throws -> Reference {
        let fleet = try InMemoryFleet(guarantee: guarantee)
        let instance = try fleet.start("solo")
        _ = try await fleet.drive(until: "the uninterrupted run")
        try await fleet.stop(instance)
        return Reference(ordered: fleet.committedOutputs(), distinct: fleet.distinctOutputs(), states: try fleet.finalStates())
    }

    /// Compares a faulted run's log with the reference, under the run's guarantee.
    static func check(_ fleet: InMemoryFleet, against reference: Reference, _ what: String) throws {
        switch fleet.guarantee {
        case .exactlyOnce:
            let outputs = fleet.committedOutputs()
            for topic in fleet.outputTopics where outputs[topic] != reference.ordered[topic] {
                let got = outputs[topic]?.map(\.count) ?? [], want = reference.ordered[topic]?.map(\.count) ?? []
                Issue.record("\(what): \(topic) differs from the uninterrupted run (records per partition \(got), expected \(want))")
            }
        case .atLeastOnce:
            let outputs = fleet.distinctOutputs()
            for topic in fleet.outputTopics {
                let got = outputs[topic] ?? [], want = reference.distinct[topic] ?? []
                let missing = want.subtracting(got), extra = got.subtracting(want)
                #expect(missing.isEmpty, "\(what): \(topic) lost \(missing.count) records, e.g. \(missing.first?.description ?? "")")
                #expect(extra.isEmpty, "\(what): \(topic) has \(extra.count) records the uninterrupted run did not write, e.g. \(extra.first?.description ?? "")")
            }
        }
        let states = try fleet.finalStates()
        let differing = Set(states.keys).union(reference.states.keys).filter { states[$0] != reference.states[$0] }
        #expect(differing.isEmpty, "\(what): the final states of \(differing.sorted()) differ from the uninterrupted run's")
    }

    @Test("two uninterrupted runs write the same outputs and states, and the input exercises the engine",
          arguments: DeliveryGuarantee.allCases)
    func uninterruptedRunsAgree(guarantee: DeliveryGuarantee) async throws {
        let first = try await Self.uninterrupted(guarantee)
        let second = try await Self.uninterrupted(guarantee)
        #expect(first.ordered == second.ordered)
        #expect(first.states == second.states)
        let decisions: [InMemoryFleet.RecordBytes] = (first.ordered[Topics.decisions] ?? []).flatMap { $0 }
        let deliveries = (first.ordered[Topics.deliveries] ?? []).flatMap { $0 }.count
        let decided: [String] = decisions.map { String(decoding: $0.value ?? [], as: UTF8.self) }
        for user in 100..<106 {
            for round in 0..<4 {
                let intent = "\"u-\(user)-signin-\(round)\""
                #expect(decided.contains { (text: String) in text.contains(intent) }, "security intent \(intent) is decided at once")
            }
        }
        #expect(decisions.count > 24, "the ordinary intents are decided too: \(decisions.count) decisions")
        #expect(deliveries > 24 && deliveries < decisions.count, "security intents deliver, the budget suppresses some others (P-BUD-1): \(deliveries) deliveries")
        #expect(first.states.count == 6)
    }

    /// Lanes count what they write and report once per batch (`OutputTally`): the totals must
    /// still be exactly what was written, label by label.
    @Test("the worker's metrics count every output, decision and delivery the run writes, by label",
          arguments: DeliveryGuarantee.allCases)
    func metricsCountWhatWasWritten(guarantee: DeliveryGuarantee) async throws {
        let fleet = try InMemoryFleet(guarantee: guarantee)
        let registry = PrometheusCollectorRegistry()
        let instance = try fleet.start("metered", observer: WorkerMetrics(worker: "delivery-worker", registry: registry))
        _ = try await fleet.drive(until: "the metered run")
        try await fleet.stop(instance)

        var expected: [String: Int] = [:]
        let outputs = fleet.committedOutputs()
        for (topic, partitions) in outputs {
            let records = partitions.joined()
            if !records.isEmpty { expected[#"fleet_records_out_total{worker="delivery-worker",topic="\#(topic)"}"#] = records.count }
            for record in records {
                switch try RecordCodec.decode(record.value ?? []) {
                case .decision(let d):
                    expected[#"fleet_decisions_total{worker="delivery-worker",outcome="\#(d.outcome.rawValue)",reason="\#(d.reason ?? "none")",rule="\#(d.rule)"}"#, default: 0] += 1
                case .delivery(let d):
                    expected[#"fleet_deliveries_total{worker="delivery-worker",category="\#(d.category)",channel="\#(d.channel.rawValue)"}"#, default: 0] += 1
                default:
                    break
                }
            }
        }
        // Outputs only: the changelog's state and history records are counted by the seal.
        let counted = registry.nonZeroSamples(of: ["fleet_records_out_total", "fleet_decisions_total", "fleet_deliveries_total"]).filter { !$0.key.contains(fleet.stateTopic) && !$0.key.contains(fleet.historyTopic) }
        #expect(expected.count > 6, "the run writes several label sets: \(expected.keys.sorted())")
        #expect(counted == expected)
    }

    @Test("a lane buffer of one byte pauses a partition at every batch, and the run writes what an uninterrupted run writes",
          arguments: DeliveryGuarantee.allCases)
    func backpressureLosesNothing(guarantee: DeliveryGuarantee) async throws {
        let reference = try await Self.uninterrupted(guarantee)
        let fleet = try InMemoryFleet(guarantee: guarantee, environment: ["FLEET_LANE_BUFFER_BYTES": "1"])
        let registry = PrometheusCollectorRegistry()
        let instance = try fleet.start("paused", observer: WorkerMetrics(worker: "delivery-worker", registry: registry))
        _ = try await fleet.drive(until: "the run with a one-byte lane buffer")
        try await fleet.stop(instance)
        // Every batch of the inbox fills its lane: the partition is paused, then resumed once
        // the lane has folded it (`FoldLane`), so the run pauses at least once per wave, and
        // `fleet_lane_pauses_total` counts each of these pauses (the only ones in this run).
        let pauses = fleet.log.pauses(of: "paused")
        #expect(pauses >= fleet.waves.count, "paused \(pauses) times")
        let counted = registry.nonZeroSamples(of: [MetricNames.lanePauses])
        #expect(counted == [#"fleet_lane_pauses_total{worker="delivery-worker",topic="rin.delivery.inbox"}"#: pauses], "\(counted)")
        try Self.check(fleet, against: reference, "\(guarantee.rawValue), one-byte lane buffer")
    }

    @Test("a crash at any step of a unit, then a fresh instance: nothing lost, nothing changed (P-IDEM-1)",
          arguments: DeliveryGuarantee.allCases)
    func crashAtEveryStep(guarantee: DeliveryGuarantee) async throws {
        let reference = try await Self.uninterrupted(guarantee)
        for fault in [InMemoryLog.Fault.crashBefore, .crashAfter] {
            var step = 1
            var stepsSeen: Set<String> = []
            while true {
                let fleet = try InMemoryFleet(guarantee: guarantee)
                let crashedAt = Mutex<InMemoryLog.Step?>(nil)
                fleet.log.inject(fault, instance: "a", atStep: step) { at in crashedAt.withLock { $0 = at } }
                let first = try fleet.start("a")
                let finished = try await fleet.drive(until: "instance a to finish or crash at step \(step)") {
                    fleet.log.isDead("a")
                }
                try await fleet.stop(first)
                guard let at = crashedAt.withLock({ $0 }) else { break }
                #expect(!finished || fleet.log.isDead("a"))
                stepsSeen.insert("\(at)".prefix { $0 != "(" }.description)
                let second = try fleet.start("b")
                _ = try await fleet.drive(until: "instance b to finish after a crash at step \(step) (\(at))")
                try await fleet.stop(second)
                try Self.check(fleet, against: reference, "\(guarantee.rawValue), \(fault) at step \(step) (\(at))")
                step += 1
            }
            let expected: Set<String> = guarantee == .exactlyOnce
                ? ["send", "restoreRead", "beginTransaction", "sendOffsetsToTransaction", "commitTransaction"]
                : ["send", "restoreRead", "commitOffsets"]
            #expect(stepsSeen.isSuperset(of: expected), "\(fault): steps crashed at \(stepsSeen.sorted())")
            #expect(step > 8, "\(fault): only \(step - 1) steps: the input must make several units")
            print("crash at every step [\(guarantee.rawValue), \(fault)]: \(step - 1) steps, crashed at \(stepsSeen.sorted())")
        }
    }
}
