import Foundation
import FleetModel
import Kafka
import Logging
import Synchronization

/// How a sealed commit unit went to the broker.
enum ShipmentOutcome: Sendable {
    /// Nothing was in the unit.
    case empty
    /// Produced and committed (under at-least-once the offsets may have failed to commit: the
    /// next unit's commit covers them).
    case committed(offsets: [TopicPartition: Int64], stateRecords: Int, historyRecords: Int, elapsed: Duration)
    /// Not committed: `causes` names the input behind each record, for the quarantine.
    case failed(KafkaError, causes: [InputPosition?], what: String)
    /// A lane ended before it handed over its part: the unit is incomplete and was not sent.
    case abandoned(String)
    /// The worker cannot go on (a state did not encode, the transactional producer is fenced).
    case stopped(WorkerStopped)
}

/// Takes one sealed unit to the broker (DESIGN.md principle 4) while the lanes fold the next:
/// gathers the lanes' parts as they hand them over, produces the unit and commits it: one
/// transaction with the consumed offsets under exactly-once; acknowledged records, then the
/// offsets, under at-least-once. One shipment is in flight at a time (`FoldCore` lands one
/// before it starts the next), so transactions stay strictly sequential.
struct UnitShipment: Sendable {
    let guarantee: DeliveryGuarantee
    let producer: any LogProducer
    let consumer: any LogConsumer
    let layout: TopicLayout
    let logger: Logger
    let crashDrill: CrashDrill?

    /// `ingest` is the unit's ingest part; `parts` the lanes' handoffs, in partition order.
    func ship<P: UserProcessor>(ingest: CommitUnit, parts: [Handoff<PartitionLane<P>.Sealed?>]) async -> ShipmentOutcome {
        // The ingest part first, then each partition's part in partition order: every topic
        // partition gets its records in the order its own partition's fold made them.
        // Shipped as the parts they are: concatenating them copied every record.
        var records = [ingest.records]
        var causes = [ingest.causes]
        var offsets = ingest.offsets
        records.reserveCapacity(parts.count + 1)
        causes.reserveCapacity(parts.count + 1)
        for handoff in parts {
            guard let part = await handoff.value else {
                return .abandoned("a partition's lane ended before it sealed its part of the unit")
            }
            if let failure = part.fatal { return .stopped(WorkerStopped(description: failure)) }
            records.append(part.records)
            causes.append(part.causes)
            if let next = part.nextInput { offsets[TopicPartition(layout.foldedTopic, part.partition)] = next }
        }
        guard records.contains(where: { !$0.isEmpty }) || !offsets.isEmpty else { return .empty }
        let started = ContinuousClock.now
        switch guarantee {
        case .exactlyOnce:
            do {
                try producer.beginTransaction()
                try await producer.send(contentsOf: records)
                crashDrill?.unitProduced()
                if !offsets.isEmpty {
                    try await producer.sendOffsetsToTransaction(offsets, membership: consumer.membership())
                }
                try await commitTransaction()
            } catch {
                if error.isFatal || error.isFenced {
                    return .stopped(WorkerStopped(description: "the transactional producer cannot go on: \(error)"))
                }
                do {
                    try await producer.abortTransaction(timeout: .seconds(30))
                } catch {
                    return .stopped(WorkerStopped(description: "aborting the transaction failed: \(error)"))
                }
                return .failed(error, causes: Array(causes.joined()), what: "the transaction was aborted")
            }
        case .atLeastOnce:
            do {
                try await producer.send(contentsOf: records)
            } catch {
                return .failed(error, causes: Array(causes.joined()), what: "producing the unit failed")
            }
            crashDrill?.unitProduced()
            do {
                try await consumer.commit(offsets)
            } catch {
                // The outputs are out; whoever owns these partitions next repeats the tail as
                // exact copies with the same ids. Keep going: the next commit covers it.
                logger.warning("offset commit failed", metadata: ["error": "\(error)"])
            }
        }
        var stateRecords = 0, historyRecords = 0
        for part in records {
            let part = part.span
            for index in part.indices {
                if part[index].topic == layout.stateTopic {
                    stateRecords += 1
                } else if part[index].topic == layout.historyTopic {
                    historyRecords += 1
                }
            }
        }
        return .committed(
            offsets: offsets, stateRecords: stateRecords, historyRecords: historyRecords, elapsed: ContinuousClock.now - started)
    }

    /// `commit_transaction`, retried while librdkafka says a retry can succeed.
    private func commitTransaction() async throws(KafkaError) {
        var attempt = 0
        while true {
            do {
                try await producer.commitTransaction(timeout: .seconds(30))
                return
            } catch where error.isRetriable && !error.requiresAbort && attempt < 5 {
                attempt += 1
                logger.warning("transaction commit will be retried", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// The crash drill (`FLEET_CRASH_DRILL_AFTER_UNITS`): dies like a killed pod — no shutdown
/// hook, nothing flushed or committed — right after the n-th unit's records were acknowledged
/// and before its offsets (or its transaction) are committed: the window in which a crash must
/// neither lose nor repeat anything (DESIGN.md principle 4). A timed external kill rarely lands
/// there when units are small.
final class CrashDrill: Sendable {
    private let after: Int
    private let produced = Mutex(0)
    private let logger: Logger

    init(after: Int, logger: Logger) {
        self.after = after
        self.logger = logger
    }

    func unitProduced() {
        let count = produced.withLock { count -> Int in
            count += 1
            return count
        }
        guard count == after else { return }
        logger.critical("crash drill: killing this process after producing commit unit \(after), before committing it (FLEET_CRASH_DRILL_AFTER_UNITS)")
        fflush(nil)  // every stdio stream, so the log says why the process died
        kill(getpid(), SIGKILL)
    }
}
