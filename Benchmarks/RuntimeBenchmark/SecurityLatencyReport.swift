import Foundation
import Kafka

extension SecurityLatency {
    /// What one latency run measured, as RESULT lines, and whether every security intent was
    /// delivered.
    struct Report {
        /// Produce → delivery readable, per delivered security intent, in milliseconds, sorted.
        var endToEnd: [Double] = []
        /// Produce → the intent's inbox timestamp (the delivery's timestamp: the broker's append
        /// time on the `LogAppendTime` inbox), milliseconds, sorted.
        var toInbox: [Double] = []
        /// The runtime's own figure: inbox timestamp → the fold emitting the delivery, sorted.
        var inFold: [Double]
        /// Produce → delivery readable of each delivered security intent in produce order, ms.
        var inProduceOrder: [Double] = []
        /// Security intents never read as delivered: position in the produce order, intent id.
        var missing: [(position: Int, id: String)] = []
        var security: Int
        var read: SecurityDeliveryReader.Result
        var produced: PacedProducer.Result
        var worker: ThroughputObserver.Snapshot

        init(workload: LatencyWorkload, produced: PacedProducer.Result, read: SecurityDeliveryReader.Result,
             worker: ThroughputObserver.Snapshot) {
            for (position, id) in workload.security.sorted(by: { $0.key < $1.key }) {
                guard let receipt = read.receipts[id], let sent = produced.sent[position] else {
                    missing.append((position, id))
                    continue
                }
                endToEnd.append((receipt.received - sent.instant).seconds * 1000)
                inProduceOrder.append(endToEnd[endToEnd.count - 1])
                if let timestamp = receipt.timestamp { toInbox.append(Double(timestamp - sent.epochMilliseconds)) }
            }
            endToEnd.sort()
            toInbox.sort()
            inFold = worker.securityFoldSeconds.map { $0 * 1000 }.sorted()
            security = workload.security.count
            self.read = read
            self.produced = produced
            self.worker = worker
        }

        func lines(options: BenchmarkOptions, loadBefore: String, loadAfter: String) -> [String] {
            let mode = options.guarantee.rawValue
            var lines = [String(
                format: "RESULT security_latency_%@ records=%d security=%d delivered=%d duplicates=%d rate=%.0f produced_per_s=%.0f p50_ms=%.0f p90_ms=%.0f p99_ms=%.0f max_ms=%.0f load1=%@..%@",
                mode, options.records, security, endToEnd.count, read.duplicates, options.rate,
                Double(options.records) / produced.seconds, Self.percentile(endToEnd, 0.5), Self.percentile(endToEnd, 0.9),
                Self.percentile(endToEnd, 0.99), endToEnd.last ?? .nan, loadBefore, loadAfter)]
            lines.append(String(
                format: "RESULT security_latency_parts_%@ to_inbox_p50_ms=%.0f to_inbox_p99_ms=%.0f in_fold_p50_ms=%.0f in_fold_p99_ms=%.0f",
                mode, Self.percentile(toInbox, 0.5), Self.percentile(toInbox, 0.99),
                Self.percentile(inFold, 0.5), Self.percentile(inFold, 0.99)))
            if let started = worker.started, let finished = worker.finished {
                let seconds = (finished - started).seconds
                let commits = worker.commitSeconds.sorted()
                let firstFold = (started - produced.started).seconds * 1000
                lines.append(String(
                    format: "RESULT security_latency_worker_%@ folded=%d secs=%.3f records_per_s=%.0f commits=%d aborted=%d commit_ms_p50=%.1f commit_ms_max=%.1f process_cpu=%.0f%% first_fold_after_ms=%.0f",
                    mode, worker.folded, seconds, Double(worker.folded - worker.firstBatch) / seconds, worker.commits, worker.aborted,
                    Self.percentile(commits, 0.5) * 1000, (commits.last ?? .nan) * 1000,
                    100 * (worker.finishCPU - worker.startCPU) / seconds, firstFold))
            } else {
                lines.append("RESULT security_latency_worker_\(mode) folded=\(worker.folded) unfinished (no commit after all \(options.records) records)")
            }
            lines.append("latency_ms_in_produce_order_\(mode) " + inProduceOrder.map { String(format: "%.0f", $0) }.joined(separator: " "))
            return lines
        }

        /// Fails unless every security intent was delivered, and only they were.
        func check() throws {
            var problems: [String] = []
            if !missing.isEmpty {
                problems.append("\(missing.count) of \(security) security intents not delivered within \(SecurityLatency.drain): "
                    + missing.map { "\($0.id) (record \($0.position))" }.joined(separator: ", "))
            }
            if !read.unexpected.isEmpty {
                problems.append("SECURITY deliveries of no security intent of the run: \(read.unexpected.joined(separator: ", "))")
            }
            if read.undecodable > 0 {
                problems.append("\(read.undecodable) records of the deliveries topic did not decode as deliveries")
            }
            if worker.finished == nil {
                problems.append("the worker did not commit all \(worker.folded) folded records within \(SecurityLatency.drain)")
            }
            if !problems.isEmpty { throw BenchmarkOptions.Invalid(description: problems.joined(separator: "; ")) }
        }

        /// The nearest-rank percentile of `sorted` (NaN when empty): with 50 samples p99 is
        /// the largest, p90 the 45th.
        static func percentile(_ sorted: [Double], _ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let rank = Int((p * Double(sorted.count)).rounded(.up))
            return sorted[min(sorted.count, max(1, rank)) - 1]
        }
    }
}
