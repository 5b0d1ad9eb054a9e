import FleetModel
import FleetTestSupport
import Foundation
import Synchronization

/// SIGKILLs a random worker process every 1–3 s and restarts it after a short pause, until
/// stopped; choices come from a seeded `SplitMix64` (the seed is printed; timing still varies).
///
/// Most kills are aimed at the window between produce and commit: the injector waits until the
/// chosen worker's records appear (the recorder tails everything the fleet writes) and strikes
/// 0–40 ms later. A worker produces a whole commit unit, awaits the acknowledgements, then
/// commits its offsets (or its transaction); the fault run makes its producer send one record
/// per request, one request at a time, so producing a unit takes long enough for the kill to
/// land inside it. The restarted worker then produces that unit again: the copies counted in
/// the summary. The other kills land anywhere: during a restore, mid-fold, while idle.
///
/// A slot is only chosen once it is back at work after its last restart (it wrote something,
/// if only a restore marker, or has been up for a while), and at most `maxDown` slots are away
/// at once: on the test broker a consumer group join takes seconds, and a fleet whose workers
/// never get to work would test nothing.
final class FaultInjector: Sendable {
    struct Kill: Sendable {
        var slot: WorkerProcesses.Slot
        /// Whether the kill followed fresh records of the worker (aimed between produce and
        /// commit) rather than landing at a random point.
        var aimed: Bool
    }

    /// When a slot was last (re)started and how much its worker had written by then.
    private struct Incarnation {
        var startedAt: ContinuousClock.Instant
        var writtenBefore: Int
    }

    private let processes: WorkerProcesses
    private let recorder: FleetRecorder
    private let seed: UInt64
    /// Most slots down (killed, not yet back at work) at once.
    private let maxDown: Int
    private let stopped = Mutex(false)
    private let log = Mutex<[Kill]>([])
    private let incarnations = Mutex<[WorkerProcesses.Slot: Incarnation]>([:])
    private let down = Mutex<Set<WorkerProcesses.Slot>>([])

    init(processes: WorkerProcesses, recorder: FleetRecorder, seed: UInt64, maxDown: Int = 2) {
        self.processes = processes
        self.recorder = recorder
        self.seed = seed
        self.maxDown = maxDown
    }

    func stop() { stopped.withLock { $0 = true } }
    var kills: [Kill] { log.withLock { $0 } }
    private var isStopped: Bool { stopped.withLock { $0 } }

    /// Back at work: wrote something (a restore marker at least) since its restart, or has been
    /// up long enough that it should have.
    private func isBack(_ slot: WorkerProcesses.Slot, now: ContinuousClock.Instant) -> Bool {
        guard let incarnation = incarnations.withLock({ $0[slot] }) else { return true }
        return recorder.written(by: slot.worker) > incarnation.writtenBefore || now - incarnation.startedAt >= .seconds(12)
    }

    /// Kills until `stop()` or for `duration`, whichever comes first; every slot it killed is
    /// running again when it returns.
    func run(for duration: Duration) async {
        var random = SplitMix64(seed: seed)
        let deadline = ContinuousClock.now + duration
        await withTaskGroup(of: Void.self) { restarts in
            while !isStopped && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(random.int(1000...3000)))
                if isStopped { break }
                let now = ContinuousClock.now
                let killed = down.withLock { $0 }
                let unavailable = processes.slots.filter { killed.contains($0) || !isBack($0, now: now) }
                guard unavailable.count < maxDown else { continue }
                let eligible = processes.slots.filter { !unavailable.contains($0) }
                guard !eligible.isEmpty else { continue }
                let slot = eligible[random.int(eligible.count)]
                var aimed = false
                if random.chance(0.75) {
                    let before = recorder.written(by: slot.worker)
                    let deadline = ContinuousClock.now + .milliseconds(2500)
                    while !aimed && ContinuousClock.now < deadline && !isStopped {
                        try? await Task.sleep(for: .milliseconds(2))
                        aimed = recorder.written(by: slot.worker) > before
                    }
                    if aimed { try? await Task.sleep(for: .milliseconds(random.int(0...40))) }
                }
                down.withLock { _ = $0.insert(slot) }
                processes.kill(slot)
                log.withLock { $0.append(Kill(slot: slot, aimed: aimed)) }
                let pause = Duration.milliseconds(random.int(200...1000))
                restarts.addTask { await self.restart(slot, after: pause) }
            }
            await restarts.waitForAll()
        }
    }

    private func restart(_ slot: WorkerProcesses.Slot, after pause: Duration) async {
        try? await Task.sleep(for: pause)
        incarnations.withLock {
            $0[slot] = Incarnation(startedAt: .now, writtenBefore: recorder.written(by: slot.worker))
        }
        // A failed start is retried: the run must end with every slot running.
        for _ in 0..<10 {
            if (try? processes.start(slot)) != nil { break }
            try? await Task.sleep(for: .milliseconds(200))
        }
        down.withLock { _ = $0.remove(slot) }
    }
}
