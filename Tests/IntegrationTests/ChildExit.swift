import Foundation

/// Waiting for a child process without `Process.waitUntilExit()`.
///
/// `waitUntilExit()` spins the calling thread's run loop until Foundation marks the process
/// ended, which it does when the child's end of a socket pair closes. Called from a test it
/// blocks a thread of the two-thread concurrency pool (so no other test's task runs there), it
/// ignores cancellation and time limits, and a copy of that socket end inherited by a process
/// spawned at the same moment by another test keeps it open after the child exited: a
/// fresh-clone CI run once waited there for ever. These waits poll instead, give up at a
/// deadline, and read the kernel's view (`/proc`, `waitpid`) when Foundation has not noticed.
enum ChildExit {
    /// How a child ended.
    enum Termination: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        var description: String {
            switch self {
            case .exited(let status): "exit \(status)"
            case .signalled(let signal): "signal \(signal)"
            }
        }

        /// The status as a shell reports it: the exit code, or 128 + the signal.
        var shellStatus: Int32 {
            switch self {
            case .exited(let status): status
            case .signalled(let signal): 128 + signal
            }
        }
    }

    struct StillRunning: Error, CustomStringConvertible {
        var pid: Int32
        var limit: Duration
        var description: String { "process \(pid) still runs \(limit) after it was awaited; it was killed" }
    }

    struct Vanished: Error, CustomStringConvertible {
        var pid: Int32
        var description: String { "process \(pid) was reaped without Foundation recording how it ended" }
    }

    /// Awaits `process`'s end for at most `limit`, then SIGKILLs it and throws `StillRunning`.
    /// Cancellable: a test's time limit ends the wait (and kills the child).
    static func termination(of process: Process, within limit: Duration) async throws -> Termination {
        let deadline = ContinuousClock.now + limit
        var unnoticedSince: ContinuousClock.Instant?
        while true {
            if let ended = try ended(process, unnoticedSince: &unnoticedSince) { return ended }
            if ContinuousClock.now >= deadline || Task.isCancelled {
                kill(process.processIdentifier, SIGKILL)
                if Task.isCancelled { throw CancellationError() }
                throw StillRunning(pid: process.processIdentifier, limit: limit)
            }
            try? await Task.sleep(for: .milliseconds(25))
        }
    }

    /// For synchronous callers (a `defer`): waits at most `limit` until `process` — already sent
    /// SIGKILL, which it cannot outlive by more than the scheduler's delay — is dead. Returns
    /// whether it is; a zombie Foundation has not reaped yet counts as dead.
    @discardableResult
    static func waitUntilDead(_ process: Process, within limit: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if !process.isRunning { return true }
            switch kernelState(process.processIdentifier) {
            case .zombie, .gone: return true
            case .alive: usleep(5_000)
            }
        }
        return false
    }

    /// The child's end if it has ended: Foundation's record when it has one. Once the kernel
    /// has shown the child ended for a while without Foundation noticing: a zombie's status
    /// reaped here (after a second), or `Vanished` for a child reaped without a record (after
    /// two: Foundation records the status right after it reaps). Never sleeps: the caller polls.
    private static func ended(_ process: Process, unnoticedSince: inout ContinuousClock.Instant?) throws -> Termination? {
        if !process.isRunning { return recorded(process) }
        let pid = process.processIdentifier
        let state = kernelState(pid)
        guard state != .alive else {
            unnoticedSince = nil
            return nil
        }
        let since = unnoticedSince ?? ContinuousClock.now
        unnoticedSince = since
        let unnoticed = ContinuousClock.now - since
        switch state {
        case .alive:
            return nil
        case .zombie:
            guard unnoticed >= .seconds(1) else { return nil }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                // The wait status's layout (the C macros do not reach Swift): low 7 bits the
                // signal, 0 for a normal exit, whose code is the next byte.
                let signal = status & 0x7f
                return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            }
            return process.isRunning ? nil : recorded(process)
        case .gone:
            guard unnoticed >= .seconds(2) else { return nil }
            throw Vanished(pid: pid)
        }
    }

    private static func recorded(_ process: Process) -> Termination {
        process.terminationReason == .exit ? .exited(process.terminationStatus) : .signalled(process.terminationStatus)
    }

    private enum KernelState { case alive, zombie, gone }

    /// The state letter of `/proc/<pid>/stat` (after the parenthesised command name).
    private static func kernelState(_ pid: Int32) -> KernelState {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return .gone }
        let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
        return state == "Z" || state == "X" ? .zombie : .alive
    }
}
