@testable import FleetWorkers
import FleetModel
import FleetService
import Prometheus
import Testing

/// `OutputTally`: a lane's counts reach the observer whole, however many label sets it meets.
@Suite("Output tally")
struct OutputTallyTests {
    static let time = Timestamp(millisecondsSinceEpoch: 1_770_000_000_000)

    static func decision(to topic: String, rule: String) -> OutputRecord {
        OutputRecord(topic: topic, timestamp: time, record: .decision(Decision(
            id: "d", userId: "u", intentId: "i", outcome: .suppressed, reason: "quiet_hours", rule: rule)))
    }

    static func samples(_ registry: PrometheusCollectorRegistry, _ metric: String) -> [String: Int] {
        registry.nonZeroSamples(of: [metric])
    }

    @Test("counts are reported once, summed by label set")
    func summedByLabels() {
        let registry = PrometheusCollectorRegistry()
        let metrics = WorkerMetrics(worker: "delivery-worker", registry: registry)
        var tally = OutputTally()
        for index in 0..<10 { tally.count(Self.decision(to: "rin.notify.decisions", rule: index < 7 ? "P-QUIET-1" : "P-BUD-1"), observer: metrics) }
        #expect(Self.samples(registry, "fleet_records_out_total").isEmpty, "nothing is reported before the batch ends")
        tally.report(to: metrics)
        tally.report(to: metrics)
        #expect(Self.samples(registry, "fleet_records_out_total") == [
            #"fleet_records_out_total{worker="delivery-worker",topic="rin.notify.decisions"}"#: 10,
        ])
        #expect(Self.samples(registry, "fleet_decisions_total") == [
            #"fleet_decisions_total{worker="delivery-worker",outcome="suppressed",reason="quiet_hours",rule="P-QUIET-1"}"#: 7,
            #"fleet_decisions_total{worker="delivery-worker",outcome="suppressed",reason="quiet_hours",rule="P-BUD-1"}"#: 3,
        ])
    }

    @Test("past 32 label sets the tally reports at once, and nothing is lost or counted twice")
    func manyLabelSets() {
        let registry = PrometheusCollectorRegistry()
        let metrics = WorkerMetrics(worker: "delivery-worker", registry: registry)
        var tally = OutputTally()
        for round in 0..<2 {
            for topic in 0..<40 { tally.count(Self.decision(to: "topic-\(topic)", rule: "P-\(round)"), observer: metrics) }
        }
        #expect(Self.samples(registry, "fleet_records_out_total").count >= 32, "reported before the list grew past its bound")
        tally.report(to: metrics)
        let out = Self.samples(registry, "fleet_records_out_total")
        #expect(out.count == 40 && out.values.allSatisfy { $0 == 2 }, "\(out)")
        #expect(Self.samples(registry, "fleet_decisions_total").values.reduce(0, +) == 80)
    }

    @Test("without an observer nothing is kept")
    func noObserver() {
        let registry = PrometheusCollectorRegistry()
        var tally = OutputTally()
        for _ in 0..<5 { tally.count(Self.decision(to: "rin.notify.decisions", rule: "P-BUD-1"), observer: nil) }
        tally.report(to: WorkerMetrics(worker: "delivery-worker", registry: registry))
        #expect(Self.samples(registry, "fleet_records_out_total").isEmpty)
    }
}

extension PrometheusCollectorRegistry {
    /// The non-zero integer samples of `metrics`, by their series (name and labels).
    func nonZeroSamples(of metrics: [String]) -> [String: Int] {
        var buffer: [UInt8] = []
        emit(into: &buffer)
        var samples: [String: Int] = [:]
        for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n")
        where metrics.contains(where: { line.hasPrefix($0 + "{") }) {
            guard let space = line.lastIndex(of: " "), let value = Int(line[line.index(after: space)...]), value > 0 else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
