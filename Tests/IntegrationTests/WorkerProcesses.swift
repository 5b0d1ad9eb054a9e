import FleetModel
import Foundation
import Synchronization
import Testing

/// The fleet as real worker executables (built by `swift test` next to the test bundle), one
/// `Process` per slot, which a test can SIGKILL and restart.
///
/// Each slot keeps a stable `FLEET_INSTANCE_ID`, so under exactly-once a restarted process takes
/// over its predecessor's `transactional.id` and fences it (aborting what it left open). Output
/// goes to one log file per slot (appended across restarts) in `logDirectory`.
///
/// A slot can be armed for a crash drill (`arm(_:afterUnits:)`): its processes start with
/// `FLEET_CRASH_DRILL_AFTER_UNITS` until one of them dies by it, which `reapDrilled()` reports
/// (and `exited()` does not: that death was asked for).
///
/// `killAll()` is synchronous so tests can call it from `defer`: no worker outlives its test. It
/// and `kill` wait for the SIGKILLed process through `ChildExit`, bounded, never
/// `waitUntilExit()`.
final class WorkerProcesses: Sendable {
    struct Slot: Sendable, Hashable, CustomStringConvertible {
        var worker: Worker
        var instance: Int
        var description: String { "\(worker.rawValue)-\(instance)" }
    }

    let slots: [Slot]
    let logDirectory: URL
    private let environment: @Sendable (Slot) -> [String: String]
    private let running = Mutex<[Slot: Process]>([:])
    /// Set by `killAll`: nothing starts afterwards, so a late restart cannot leak a process.
    private let closed = Mutex(false)
    private let counts = Mutex((kills: 0, starts: 0, drills: 0))
    /// Slots armed for a crash drill, with the unit it fires after; and the slots whose running
    /// process was started armed.
    private let drill = Mutex((armed: [Slot: Int](), armedIncarnations: Set<Slot>()))

    /// `environment` gives each slot's variables (its worker's test settings plus overrides).
    init(slots: [Slot], logDirectory: URL, environment: @escaping @Sendable (Slot) -> [String: String]) throws {
        self.slots = slots
        self.logDirectory = logDirectory
        self.environment = environment
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
    }

    var kills: Int { counts.withLock { $0.kills } }
    var restarts: Int { counts.withLock { max(0, $0.starts - slots.count) } }
    /// Processes that killed themselves by their crash drill.
    var drills: Int { counts.withLock { $0.drills } }

    /// Starts `slot`'s processes with a crash drill after their `units`-th commit unit until one
    /// of them dies by it.
    func arm(_ slot: Slot, afterUnits units: Int) {
        drill.withLock { $0.armed[slot] = units }
    }

    /// Whether `process` (slot's) died by its crash drill: it was started armed and ended by
    /// SIGKILL that nobody here sent. Disarms the slot and counts the drill when so.
    private func diedByDrill(_ slot: Slot, _ process: Process) -> Bool {
        guard Self.endedBySIGKILL(process) else { return false }
        let drilled = drill.withLock { state in
            guard state.armedIncarnations.remove(slot) != nil else { return false }
            state.armed[slot] = nil
            return true
        }
        if drilled { counts.withLock { $0.drills += 1 } }
        return drilled
    }

    /// How a crash drill ends a process (and a kill from here, which `kill` tells apart).
    private static func endedBySIGKILL(_ process: Process) -> Bool {
        !process.isRunning && process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
    }

    /// Slots whose process died by its crash drill since the last call; they are no longer
    /// running, and `start` brings them back unarmed.
    func reapDrilled() -> [Slot] {
        running.withLock { processes in
            let drilled = processes.filter { slot, process in diedByDrill(slot, process) }.map(\.key)
            for slot in drilled { processes[slot] = nil }
            return drilled
        }
    }

    func startAll() throws {
        for slot in slots { try start(slot) }
    }

    func isRunning(_ slot: Slot) -> Bool { running.withLock { $0[slot]?.isRunning ?? false } }

    struct Closed: Error {}

    /// Starts `slot`'s executable; a slot already running is left alone. Throws `Closed` after
    /// `killAll()`.
    func start(_ slot: Slot) throws {
        if closed.withLock({ $0 }) { throw Closed() }
        if isRunning(slot) { return }
        let process = Process()
        process.executableURL = try ShutdownTests.executable(slot.worker.rawValue)
        var variables = environment(slot)
        variables["FLEET_INSTANCE_ID"] = slot.description
        let armedAfter = drill.withLock { $0.armed[slot] }
        if let armedAfter { variables["FLEET_CRASH_DRILL_AFTER_UNITS"] = String(armedAfter) }
        process.environment = variables
        let log = logDirectory.appendingPathComponent("\(slot).log")
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        handle.write(Data("---- start \(Date())\n".utf8))
        process.standardOutput = handle
        process.standardError = handle
        defer { try? handle.close() }  // the child has its own descriptor
        try process.run()
        let admitted = running.withLock { processes in
            // Checked under the same lock `killAll` takes, so no process slips past it.
            if closed.withLock({ $0 }) { return false }
            processes[slot] = process
            drill.withLock { state in
                if armedAfter != nil { state.armedIncarnations.insert(slot) } else { state.armedIncarnations.remove(slot) }
            }
            return true
        }
        if !admitted {
            Foundation.kill(process.processIdentifier, SIGKILL)
            ChildExit.waitUntilDead(process)
            throw Closed()
        }
        counts.withLock { $0.starts += 1 }
    }

    /// SIGKILLs `slot` (no shutdown hook runs: whatever it produced but did not commit stays
    /// uncommitted) and waits until it is gone.
    func kill(_ slot: Slot) {
        guard let process = running.withLock({ $0.removeValue(forKey: slot) }) else { return }
        if diedByDrill(slot, process) { return }
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            counts.withLock { $0.kills += 1 }
        }
        ChildExit.waitUntilDead(process)
    }

    /// Slots whose process exited on its own (a worker that stopped with an error), leaving out
    /// deaths by crash drill.
    func exited() -> [(slot: Slot, status: Int32)] {
        let armed = drill.withLock { $0.armedIncarnations }
        return running.withLock { processes in
            processes.compactMap { slot, process in
                if process.isRunning || (armed.contains(slot) && Self.endedBySIGKILL(process)) { return nil }
                return (slot, process.terminationStatus)
            }
        }
    }

    /// Kills every process still running and waits for each; later starts are refused.
    func killAll() {
        let all = running.withLock { processes in
            closed.withLock { $0 = true }
            defer { processes.removeAll() }
            return Array(processes.values)
        }
        for process in all where process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        for process in all { ChildExit.waitUntilDead(process) }
    }

    /// The last lines of `slot`'s log, for failure messages.
    func logTail(_ slot: Slot, lines: Int = 15) -> String {
        let log = logDirectory.appendingPathComponent("\(slot).log")
        guard let text = try? String(contentsOf: log, encoding: .utf8) else { return "(no log)" }
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}
