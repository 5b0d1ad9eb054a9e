import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Logging
import Synchronization
import Testing

/// One member of a worker's consumer group in a fault test: a `WorkerRuntime` in this process,
/// or a worker executable (which can also be killed outright). Either way it remembers how it
/// ended, so a test can require that no instance stopped with an error on its own.
final class WorkerInstance: Sendable {
    enum Ending: Sendable, Equatable {
        case graceful
        case failed(String)
        case killed
    }

    let name: String
    /// The worker process's id (nil in-process): restore markers carry it.
    let pid: pid_t?
    /// The worker process's log (nil in-process).
    let log: URL?
    private let ending: EndingRecord
    private let rebalances: @Sendable () -> Int
    private let stopper: @Sendable () -> Void
    private let killer: (@Sendable () -> Void)?
    private let done: Task<Void, Never>

    private init(name: String, pid: pid_t?, log: URL? = nil, ending: EndingRecord, rebalances: @escaping @Sendable () -> Int, stopper: @escaping @Sendable () -> Void,
                 killer: (@Sendable () -> Void)?, done: Task<Void, Never>) {
        self.name = name
        self.pid = pid
        self.log = log
        self.ending = ending
        self.rebalances = rebalances
        self.stopper = stopper
        self.killer = killer
        self.done = done
    }

    /// How it ended; nil while it runs.
    var ended: Ending? { ending.value }

    /// Whether a restore marker's nonce (`<instance id or host>-<pid>-<attempt>`) is this
    /// process's.
    func wrote(marker nonce: String) -> Bool {
        guard let pid else { return false }
        let parts = nonce.split(separator: "-")
        return parts.count >= 3 && parts[parts.count - 2] == "\(pid)"
    }

    /// Rebalance events (assigned, revoked, lost) this instance has seen so far.
    var rebalanceCount: Int { rebalances() }

    /// Waits until none of `instances` has seen a rebalance event for `quiet`: the group has
    /// settled, and each member's logged assignment (`assignment()`) is its current one. Scaling
    /// steps wait for this before they assert on assignments.
    static func awaitSettled(_ instances: [WorkerInstance], quiet: Duration = .seconds(8), timeout: Duration = .seconds(90)) async throws {
        let deadline = ContinuousClock.now + timeout
        var last = instances.map(\.rebalanceCount)
        var since = ContinuousClock.now
        while ContinuousClock.now - since < quiet {
            try #require(ContinuousClock.now < deadline, "the group did not settle within \(timeout)")
            try await Task.sleep(for: .milliseconds(250))
            let now = instances.map(\.rebalanceCount)
            if now != last {
                last = now
                since = ContinuousClock.now
            }
        }
    }

    /// What every instance gets on top of `FleetHarness.environment`: a rebalance timeout
    /// (librdkafka sends max.poll.interval.ms) short enough that a rebalance waiting on a member
    /// that will never rejoin ends in seconds, not the default five minutes.
    ///
    /// No `FLEET_INSTANCE_ID`: it becomes `group.instance.id`, and a static member does not
    /// send LeaveGroup when it closes (KIP-345, librdkafka by design). Tansu, which does not
    /// implement static membership, then keeps the departed member in the group and waits for
    /// it in every later rebalance — measured: the next member never gets an assignment. An
    /// instance is told apart by its pid instead, which its restore markers carry.
    static func environment(_ name: String) -> [String: String] {
        ["KAFKA_MAX_POLL_INTERVAL_MS": "10000"]
    }

    /// Starts `processor` as `worker` in this process with member id `name`.
    static func inProcess<P: UserProcessor>(
        _ name: String, _ worker: Worker, _ processor: P, in fleet: FleetHarness, _ overrides: [String: String] = [:]
    ) throws -> WorkerInstance {
        // FLEET_TEST_WORKER_LOG_LEVEL=info shows rebalances and restores when a test fails.
        var logger = Logger(label: "test.\(worker.rawValue).\(name)")
        logger.logLevel = ProcessInfo.processInfo.environment["FLEET_TEST_WORKER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let settings = try fleet.settings(for: worker, Self.environment(name).merging(overrides) { $1 })
        let rebalances = TestObserver()
        let runtime = WorkerRuntime(settings: settings, processor: processor, observer: rebalances, logger: logger)
        let task = Task { try await runtime.run() }
        let ending = EndingRecord()
        let done = Task {
            do {
                try await task.value
                ending.finish(.graceful)
            } catch {
                ending.finish(.failed("\(error)"))
            }
        }
        return WorkerInstance(
            name: name, pid: nil, ending: ending, rebalances: { rebalances.rebalances }, stopper: { task.cancel() }, killer: nil, done: done)
    }

    /// Starts the `executable` worker binary with member id `name`; its stderr goes to a file
    /// shown when it fails.
    static func process(
        _ name: String, _ worker: Worker, executable: URL, in fleet: FleetHarness, _ overrides: [String: String] = [:]
    ) throws -> WorkerInstance {
        let process = Process()
        process.executableURL = executable
        process.environment = fleet.environment(
            for: worker, Self.environment(name).merging(["FLEET_LOG_LEVEL": "info"]) { $1 }.merging(overrides) { $1 })
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(fleet.namespace.prefix)\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let pid = process.processIdentifier
        let ending = EndingRecord()
        let done = Task {
            // Bounded so that the task ends even if nothing stops the worker; a test's own waits are shorter.
            let ended: Result<ChildExit.Termination, any Error>
            do { ended = .success(try await ChildExit.termination(of: process, within: .seconds(3600))) } catch { ended = .failure(error) }
            let stderr = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            switch ended {
            case .success(.exited(0)): ending.finish(.graceful)
            case .success(.signalled(SIGKILL)): ending.finish(.killed)
            case .success(let termination): ending.finish(.failed("\(name) ended (\(termination)):\n\(stderr)"))
            case .failure(let error): ending.finish(.failed("\(name): \(error)\n\(stderr)"))
            }
        }
        // The worker logs each rebalance event at info level ("event=… rebalance").
        let rebalances: @Sendable () -> Int = {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").filter { $0.contains("event=") && $0.hasSuffix("rebalance") }.count
        }
        return WorkerInstance(
            name: name, pid: pid, log: log, ending: ending, rebalances: rebalances, stopper: { kill(pid, SIGTERM) },
            killer: { kill(pid, SIGKILL) }, done: done)
    }

    /// What the group assigns this worker process now, by topic, replayed from the rebalance
    /// events it logged ("event=assigned t[0],t[1] (eager) … rebalance"): assigned adds,
    /// revoked and lost remove. Empty once it stopped (its final revocation is logged too).
    func assignment() -> [String: Set<Int32>] {
        guard let log, let text = try? String(contentsOf: log, encoding: .utf8) else { return [:] }
        var owned: Set<String> = []
        for line in text.split(separator: "\n") where line.hasSuffix("rebalance") {
            guard let start = line.range(of: "event=") else { continue }
            let event = line[start.upperBound...]
            let words = event.split(separator: " ", maxSplits: 1)
            guard words.count == 2 else { continue }
            let list = words[1].prefix { $0 != " " }
            let partitions = list.split(separator: ",").map(String.init)
            switch words[0] {
            case "assigned": owned.formUnion(partitions)
            case "revoked", "lost": owned.subtract(partitions)
            default: continue
            }
        }
        var byTopic: [String: Set<Int32>] = [:]
        for name in owned {
            guard let open = name.lastIndex(of: "["), let partition = Int32(name[name.index(after: open)...].dropLast()) else { continue }
            byTopic[String(name[..<open]), default: []].insert(partition)
        }
        return byTopic
    }

    /// Asks it to stop gracefully (cancel, or SIGTERM) and waits until it ended.
    func stop() async {
        stopper()
        await done.value
    }

    /// Stops it without waiting (cancel, or SIGKILL for a process): for clean-up after a failed
    /// test, where awaiting is not possible.
    func abandon() {
        if let killer { killer() } else { stopper() }
    }

    /// Kills the process outright (SIGKILL): nothing is committed or left cleanly.
    func sigkill() async throws {
        let killer = try #require(killer, "\(name) runs in this process and cannot be killed")
        killer()
        await done.value
    }

    /// The first ending seen; written by the task that watches the instance.
    private final class EndingRecord: Sendable {
        private let stored = Mutex<Ending?>(nil)
        var value: Ending? { stored.withLock { $0 } }
        func finish(_ how: Ending) { stored.withLock { if $0 == nil { $0 = how } } }
    }
}
