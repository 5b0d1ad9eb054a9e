import DequeModule
import FleetModel
import Kafka
import Synchronization

/// A folded partition's own task: it owns the partition's fold (`PartitionLane`: states, timer
/// heap, log time, its part of the open unit) and folds the records the dispatcher hands it, in
/// order, while other partitions fold on theirs: partitions fold in parallel on every core.
///
/// The queue is bounded by the dispatcher: `submit` says when the lane holds more than its
/// high-water mark (`FLEET_LANE_BUFFER_BYTES` of keys and values, plus `bytesPerRecord` each, so
/// a partition of empty records is bounded too), the dispatcher pauses the
/// partition's fetching, and the lane calls `drained` once it is down to its low-water mark (a
/// quarter), so memory stays bounded without one busy partition holding up the others. The
/// mark is in bytes because records of one inbox differ in size by two orders of magnitude, and
/// large because a pause is not free: librdkafka drops the partition's prefetched records and
/// fetches them again after the resume.
///
/// Everything the runtime asks of the fold goes through the same queue, so it applies exactly
/// between two records: `seal()` ends the unit after the records submitted before it,
/// `route(_:)` changes inbox routes from the next record on, `stop()` hands the fold back.
final class FoldLane<P: UserProcessor>: Sendable {
    /// Tells a lane from the lane that replaced it on the same partition.
    let id: Int
    let partition: Int32

    private enum Job: Sendable {
        case records([KafkaMessage], bytes: Int)
        case seal(Handoff<PartitionLane<P>.Sealed?>)
        case route(GenerationMap)
        case stop(CheckedContinuation<(fold: PartitionFold<P>, nextOffset: Int64?)?, Never>)
    }

    private struct Shared: Sendable {
        var jobs: Deque<Job> = []
        var queuedBytes = 0
        var waiter: CheckedContinuation<Void, Never>?
        var discarded = false
        /// Whether the dispatcher paused the partition because this lane was full.
        var paused = false
        /// The fold's next timer, as of its last record (for ticks).
        var nextWakeUp: Timestamp?
    }

    private let shared: Mutex<Shared>
    private let start: Mutex<PartitionLane<P>?>
    private let highWater: Int
    private let lowWater: Int
    private let foldedTopic: String
    private let observer: (any RuntimeObserver)?
    private let drained: @Sendable (_ partition: Int32, _ lane: Int) async -> Void

    /// `drained` is called (from the lane's task) when a lane whose partition was paused for
    /// being full is down to a quarter of `bufferBytes`.
    init(
        id: Int, lane: PartitionLane<P>, bufferBytes: Int, drained: @escaping @Sendable (_ partition: Int32, _ lane: Int) async -> Void
    ) {
        self.id = id
        self.partition = lane.partition
        self.highWater = max(bufferBytes, 1)
        self.lowWater = bufferBytes / 4
        let topics = lane.context.settings.topics
        self.foldedTopic = topics.logical(lane.context.layout.foldedTopic) ?? lane.context.layout.foldedTopic
        self.observer = lane.context.observer
        self.drained = drained
        self.shared = Mutex(Shared(nextWakeUp: lane.nextWakeUp))
        self.start = Mutex(lane)
    }

    // MARK: The dispatcher's side

    /// What a queued record counts for besides its key and value.
    static var bytesPerRecord: Int { 64 }

    /// Queues records of this partition (in offset order). Returns true when the lane is now
    /// over its high-water mark and marks it paused: the caller pauses the partition, and the
    /// lane calls `drained` when it may resume.
    ///
    /// Takes `records`: the lane folds them by moving each out (`PartitionLane.fold`), which
    /// needs the only reference to them.
    func submit(_ records: consuming [KafkaMessage]) -> Bool {
        var bytes = records.count * Self.bytesPerRecord
        let span = records.span
        for index in span.indices { bytes += (span[index].key?.count ?? 0) + (span[index].value?.count ?? 0) }
        // Moved into the queue: a copy left here would share the records with the lane.
        var job: Job? = .records(records, bytes: bytes)
        let (waiter, full) = shared.withLock { shared -> (CheckedContinuation<Void, Never>?, Bool) in
            guard !shared.discarded, let job = job.take() else { return (nil, false) }
            shared.jobs.append(job)
            shared.queuedBytes += bytes
            let full = !shared.paused && shared.queuedBytes > highWater
            if full { shared.paused = true }
            return (shared.waiter.take(), full)
        }
        waiter?.resume()
        return full
    }

    /// Ends the open unit after every record submitted so far; the lane hands the sealed part
    /// over when it gets there (nil when the lane is discarded first), and folds on.
    func seal() -> Handoff<PartitionLane<P>.Sealed?> {
        let sealed = Handoff<PartitionLane<P>.Sealed?>()
        if !enqueue(.seal(sealed)) { sealed.fulfil(nil) }
        return sealed
    }

    /// Inbox routes change from the next submitted record on.
    func route(_ map: GenerationMap) {
        _ = enqueue(.route(map))
    }

    /// Ends the lane after the records submitted so far and hands back its fold and the offset
    /// it reached (nil when the lane was discarded). The caller sealed and committed first:
    /// what was folded since the last seal is not part of any unit.
    func stop() async -> (fold: PartitionFold<P>, nextOffset: Int64?)? {
        await withCheckedContinuation { continuation in
            if !enqueue(.stop(continuation)) { continuation.resume(returning: nil) }
        }
    }

    /// Ends the lane at once, dropping its fold and whatever it has not folded or sealed (a
    /// rewind or a lost partition: the work will be redone from the committed state).
    func discard() {
        let (waiter, pending) = shared.withLock { shared -> (CheckedContinuation<Void, Never>?, Deque<Job>) in
            shared.discarded = true
            let pending = shared.jobs
            shared.jobs = []
            shared.queuedBytes = 0
            return (shared.waiter.take(), pending)
        }
        for job in pending { Self.cancel(job) }
        waiter?.resume()
    }

    /// The fold's next timer as of the last record it folded.
    var nextWakeUp: Timestamp? { shared.withLock { $0.nextWakeUp } }

    /// Forgets that the partition was paused for being full (it was paused or resumed for
    /// another reason meanwhile).
    func clearPaused() {
        shared.withLock { $0.paused = false }
    }

    private func enqueue(_ job: Job) -> Bool {
        let (accepted, waiter) = shared.withLock { shared -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !shared.discarded else { return (false, nil) }
            shared.jobs.append(job)
            return (true, shared.waiter.take())
        }
        waiter?.resume()
        return accepted
    }

    private static func cancel(_ job: Job) {
        switch job {
        case .seal(let sealed): sealed.fulfil(nil)
        case .stop(let continuation): continuation.resume(returning: nil)
        case .records, .route: break
        }
    }

    // MARK: The lane's task

    /// Folds until stopped or discarded. Started once, by the runtime's lane group.
    func run() async {
        guard var lane = start.withLock({ $0.take() }) else { return }
        while let job = await nextJob() {
            switch consume job {
            case .records(var records, let bytes):
                let folded = lane.fold(&records)
                if folded > 0 { observer?.recordIn(topic: foldedTopic, count: folded) }
                let wakeUp = lane.nextWakeUp
                let resume = shared.withLock { shared -> Bool in
                    shared.queuedBytes -= bytes
                    shared.nextWakeUp = wakeUp
                    guard shared.paused, shared.queuedBytes <= lowWater, !shared.discarded else { return false }
                    shared.paused = false
                    return true
                }
                if resume { await drained(partition, id) }
            case .seal(let sealed):
                sealed.fulfil(lane.seal())
            case .route(let map):
                lane.generations = map
            case .stop(let continuation):
                shared.withLock { $0.discarded = true }
                continuation.resume(returning: (lane.fold, lane.nextOffset))
                discard()
                return
            }
        }
    }

    /// The next job, waiting for one; nil once the lane was discarded.
    private func nextJob() async -> Job? {
        while true {
            let next = shared.withLock { shared -> (job: Job?, ended: Bool) in
                if shared.discarded { return (nil, true) }
                return (shared.jobs.popFirst(), false)
            }
            if next.ended { return nil }
            if let job = next.job { return job }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = shared.withLock { shared -> Bool in
                    if shared.discarded || !shared.jobs.isEmpty { return true }
                    shared.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }
}
