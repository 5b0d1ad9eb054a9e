import FleetModel
import FleetWorkers
import Kafka

/// Decides that everything a wave of input causes has happened, from counts and committed
/// offsets only (never lag or high watermarks, which the test broker reports wrong):
///
/// - every worker has committed, on every partition it consumes, past the end of what is there:
///   for external topics the end of what the test produced; for inboxes past every record the
///   recorder has read, except copies of records before the committed offset (re-sent or
///   aborted copies change nothing, P-IDEM-1; and a unit holding only such copies has no
///   records, so under exactly-once its offsets go in a transaction without records — which
///   Tansu silently drops, see `TansuQuirkTests`). A committed offset means the outputs of
///   everything before it are in the log (acknowledged before the offset commit, or in the
///   same transaction);
/// - at the end (`requireDecisions`), every intent in the delivery inbox has a decision (before
///   that, intents may wait in a coalescing window or quiet hours until a later wave);
/// - both hold on two looks in a row with no new inbox or output record read in between, so
///   records appended by the last commits (forwards, intents of the reminder worker) are seen.
///
/// Restarts do not disturb it: a restarted worker resumes from its committed offsets, so the
/// condition simply holds later.
struct WaveProgress {
    let namespace: TopicNamespace
    let partitions: Int32
    let recorder: FleetRecorder
    private let readers: [Worker: KafkaConsumer]
    /// Per logical external topic and partition, the offset after the last record produced.
    private(set) var inputEnds: [TopicPartition: Int64] = [:]
    /// Later generations' logs (logical name → partitions and folding worker), checked like
    /// the inboxes once they exist (a run that migrates a worker).
    var generationInboxes: [String: (partitions: Int32, worker: Worker)] = [:]

    init(bootstrap: String, namespace: TopicNamespace, partitions: Int32, recorder: FleetRecorder) throws {
        self.namespace = namespace
        self.partitions = partitions
        self.recorder = recorder
        var readers: [Worker: KafkaConsumer] = [:]
        for worker in FleetHarness.deciders {
            // Same group as the worker, only to read its committed offsets (never subscribes).
            readers[worker] = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
                "bootstrap.servers": bootstrap, "group.id": namespace.prefix + worker.rawValue,
            ]), logger: .tests)
        }
        self.readers = readers
    }

    func close() async {
        for reader in readers.values { await reader.close() }
    }

    mutating func produced(_ reports: [DeliveryReport]) {
        for report in reports {
            let key = TopicPartition(namespace.logical(report.topic) ?? report.topic, report.partition)
            inputEnds[key] = max(inputEnds[key] ?? 0, report.offset + 1)
        }
    }

    /// What is not done yet, one line each; empty when the wave's effects are complete.
    func pending(requireDecisions: Bool) async throws -> [String] {
        var pending: [String] = []
        for worker in FleetHarness.deciders {
            guard let reader = readers[worker] else { continue }
            let topics = [worker.foldedTopic] + worker.ingestTopics
            var physical: [TopicPartition] = []
            for topic in topics {
                for p in 0..<partitions { physical.append(TopicPartition(namespace.physical(topic), p)) }
            }
            for (topic, log) in generationInboxes where log.worker == worker {
                for p in 0..<log.partitions { physical.append(TopicPartition(namespace.physical(topic), p)) }
            }
            let committed = try await reader.committed(physical)
            for partition in physical {
                let logical = TopicPartition(namespace.logical(partition.topic) ?? partition.topic, partition.partition)
                let done = max(0, committed[partition] ?? 0)
                if [Topics.deliveryInbox, Topics.reminderInbox].contains(Topics.generationBase(of: logical.topic).base) {
                    if recorder.hasNewRecords(logical.topic, logical.partition, from: done) {
                        let end = recorder.inboxEnd(logical.topic, logical.partition)
                        pending.append("\(worker.rawValue) committed \(logical) at \(done), records up to \(end)")
                    }
                } else if done < inputEnds[logical] ?? 0 {
                    pending.append("\(worker.rawValue) committed \(logical) at \(done) < \(inputEnds[logical] ?? 0)")
                }
            }
        }
        let undecided = requireDecisions ? recorder.undecidedIntents : 0
        if undecided > 0 { pending.append("\(undecided) intent(s) without a decision") }
        return pending
    }

    struct Timeout: Error, CustomStringConvertible {
        var description: String
    }

    /// Waits until `pending()` is empty on two looks `interval` apart with nothing new read in
    /// between; throws with what is still pending after `timeout`.
    func waitUntilComplete(timeout: Duration, requireDecisions: Bool, interval: Duration = .milliseconds(300)) async throws {
        let deadline = ContinuousClock.now + timeout
        var lastEmpty: Int?
        var last: [String] = []
        while ContinuousClock.now < deadline {
            let read = recorder.dataRecordsRead
            last = try await pending(requireDecisions: requireDecisions)
            if last.isEmpty {
                if lastEmpty == read { return }
                lastEmpty = read
            } else {
                lastEmpty = nil
            }
            try await Task.sleep(for: interval)
        }
        throw Timeout(description: "wave not complete after \(timeout): \(last.prefix(8).joined(separator: "; "))")
    }
}
