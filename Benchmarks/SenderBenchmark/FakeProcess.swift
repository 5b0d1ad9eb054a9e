import Foundation
import SenderTestSupport

/// The `provider-fakes` executable run as a child process in a temporary directory, so its CPU
/// is not the benchmark's.
struct FakeProcess {
    let process: Process
    let directory: URL

    var pid: Int32 { process.processIdentifier }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// `executable` or, when nil, `provider-fakes` next to this benchmark's own executable.
    static func start(executable: String?) throws -> FakeProcess {
        let own = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let path = executable ?? own.appendingPathComponent("provider-fakes").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "no provider-fakes at \(path): build it (swift build -c release --product provider-fakes) or set PROVIDER_FAKES")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sender-benchmark-\(UUID().uuidString)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--directory", directory.path]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return FakeProcess(process: process, directory: directory)
    }

    /// The `SENDER_*` variables, once the process has written them (it is then listening).
    func senderEnvironment() async throws -> [String: String] {
        let file = directory.appendingPathComponent("sender.env")
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: file.path) {
            guard process.isRunning else { throw Failure(description: "provider-fakes exited with \(process.terminationStatus)") }
            guard ContinuousClock.now < deadline else { throw Failure(description: "provider-fakes not ready after 30 s") }
            try await Task.sleep(for: .milliseconds(50))
        }
        return ProviderStandIns.readSenderEnv(try String(contentsOf: file, encoding: .utf8))
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// User plus system CPU seconds.
enum CPUTime {
    static func ofThisProcess() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// From `/proc/<pid>/stat` (utime and stime, fields 14 and 15, in clock ticks).
    static func of(pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        guard let close = stat.lastIndex(of: ")") else { throw FakeProcess.Failure(description: "unreadable /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and [12].
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw FakeProcess.Failure(description: "unreadable /proc/\(pid)/stat")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
