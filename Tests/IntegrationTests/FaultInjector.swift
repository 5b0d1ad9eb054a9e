import FleetModel
import FleetTestSupport
import Foundation

/// SIGKILLs worker processes while a wave is being processed and restarts them after a short
/// pause; choices come from a seeded `SplitMix64` (the seed is printed; timing still varies).
///
/// A disturbed wave gets two kills, 1–3 s apart. Most are aimed at the window between produce
/// and commit: the injector waits until one of the candidate workers' records appear (the
/// recorder tails everything the fleet writes) and strikes that worker 0–40 ms later. A worker
/// produces a whole commit unit, awaits the acknowledgements, then commits its offsets (or its
/// transaction); the fault run makes its producer keep few records in flight, so producing a
/// unit takes long enough (~1 ms per record) for the kill to land inside it, and the restarted
/// worker produces that unit again: the copies counted in the summary. The other kills land
/// anywhere: during a group join or a restore, mid-fold, while idle.
///
/// Timed kills may all miss that window when units are small, so the injector also arms crash
/// drills (`armDrills()`): the delivery worker and one upstream worker kill themselves right
/// after a unit's records were acknowledged and before its commit (`FLEET_CRASH_DRILL_AFTER_UNITS`),
/// which hits the window for certain; `reviveDrilledSlots()` restarts them like any victim.
///
/// A slot is only chosen once it is back at work after its last restart (it wrote something,
/// if only a restore marker, or has been up for a while), and at most `maxDown` slots are away
/// at once: on the test broker a restart costs ~8 s (a group join takes ~6 s, then the
/// restore), so kills every 1–3 s throughout would leave no worker working.
actor FaultInjector {
    struct Kill: Sendable {
        var slot: WorkerProcesses.Slot
        var wave: Int
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
    private let maxDown: Int
    private var random: SplitMix64
    private(set) var kills: [Kill] = []
    /// Slots that died by their crash drill, in order.
    private(set) var drilled: [WorkerProcesses.Slot] = []
    private var incarnations: [WorkerProcesses.Slot: Incarnation] = [:]
    private var down: Set<WorkerProcesses.Slot> = []

    init(processes: WorkerProcesses, recorder: FleetRecorder, seed: UInt64, maxDown: Int = 2) {
        self.processes = processes
        self.recorder = recorder
        self.random = SplitMix64(seed: seed)
        self.maxDown = maxDown
    }

    /// Kills two workers during `wave`, 1–3 s apart, and restarts them; returns once every slot
    /// it killed runs again. Their restarts overlap, so the wave waits for about one restart.
    /// The first kill goes to an upstream worker (they write the inboxes), the second to any.
    func disturb(wave: Int) async {
        await withTaskGroup(of: Void.self) { restarts in
            for n in 0..<2 {
                if n > 0 { try? await Task.sleep(for: .milliseconds(random.int(1000...3000))) }
                // The second kill must not wait for the first victim to come back: their
                // restarts should overlap.
                guard let (slot, aimed) = await chooseVictim(upstreamOnly: n == 0, waitingAtMost: n == 0 ? .seconds(10) : .seconds(2))
                else { continue }
                down.insert(slot)
                processes.kill(slot)
                kills.append(Kill(slot: slot, wave: wave, aimed: aimed))
                let pause = Duration.milliseconds(random.int(200...1000))
                restarts.addTask { await self.restart(slot, after: pause) }
            }
        }
    }

    /// Arms a crash drill in the delivery worker (after its 3rd–8th unit: it writes outputs) and
    /// in one upstream worker (after its 2nd–5th: it writes the inbox), chosen by the seed.
    func armDrills() {
        let upstream = processes.slots.filter { $0.worker != .delivery }
        if !upstream.isEmpty { processes.arm(upstream[random.int(upstream.count)], afterUnits: random.int(2...5)) }
        for slot in processes.slots where slot.worker == .delivery {
            processes.arm(slot, afterUnits: random.int(3...8))
        }
    }

    /// Restarts slots that died by their crash drill, after the same short pause as a killed
    /// one, until cancelled.
    func reviveDrilledSlots() async {
        await withTaskGroup(of: Void.self) { restarts in
            while !Task.isCancelled {
                for slot in processes.reapDrilled() {
                    down.insert(slot)
                    drilled.append(slot)
                    let pause = Duration.milliseconds(random.int(200...1000))
                    restarts.addTask { await self.restart(slot, after: pause) }
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Back at work: wrote something since its restart, or has been up long enough that it
    /// should have.
    private func isBack(_ slot: WorkerProcesses.Slot, now: ContinuousClock.Instant) -> Bool {
        guard let incarnation = incarnations[slot] else { return true }
        return recorder.written(by: slot.worker) > incarnation.writtenBefore || now - incarnation.startedAt >= .seconds(12)
    }

    /// The worker to kill: with probability 9/10 whichever candidate writes next (waiting up to
    /// `wait`), then 0–40 ms later; otherwise, or when none writes, a random candidate at once.
    private func chooseVictim(upstreamOnly: Bool, waitingAtMost wait: Duration) async -> (WorkerProcesses.Slot, aimed: Bool)? {
        let now = ContinuousClock.now
        let unavailable = processes.slots.filter { down.contains($0) || !isBack($0, now: now) }
        guard unavailable.count < maxDown else { return nil }
        let candidates = processes.slots.filter {
            !unavailable.contains($0) && !(upstreamOnly && $0.worker == .delivery)
        }
        guard !candidates.isEmpty else { return nil }
        if random.chance(0.9) {
            let before = candidates.map { recorder.written(by: $0.worker) }
            let deadline = ContinuousClock.now + wait
            while ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(2))
                let writing = candidates.indices.filter { recorder.written(by: candidates[$0].worker) > before[$0] }
                if !writing.isEmpty {
                    let slot = candidates[writing[random.int(writing.count)]]
                    try? await Task.sleep(for: .milliseconds(random.int(0...40)))
                    return (slot, true)
                }
            }
        }
        return (candidates[random.int(candidates.count)], false)
    }

    private func restart(_ slot: WorkerProcesses.Slot, after pause: Duration) async {
        try? await Task.sleep(for: pause)
        incarnations[slot] = Incarnation(startedAt: .now, writtenBefore: recorder.written(by: slot.worker))
        // A failed start is retried: every slot must run again.
        for _ in 0..<10 {
            do {
                try processes.start(slot)
                break
            } catch is WorkerProcesses.Closed {
                break  // the run is over
            } catch {
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        down.remove(slot)
    }
}
