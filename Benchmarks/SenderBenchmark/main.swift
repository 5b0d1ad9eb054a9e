import FleetModel
import Foundation
import Logging
import ProviderClients
import SenderCore
import SenderTestSupport

// Sends through the stand-in APNs over TLS + HTTP/2 with the sender's client (one
// async-http-client, its connection pool and concurrent streams), as issue 17 asks. The stand-in
// runs in a process of its own (`provider-fakes`, as in the compose stack), so the CPU this
// process uses is the client's alone: sends/s at full speed with CONCURRENCY calls in flight,
// CPU per thousand sends of the client (getrusage) and of the fake (/proc/<pid>/stat), then
// latency when paced at half that rate. A measurement printed as RESULT lines, not a timed test.
//
//   swift build -c release --product SenderBenchmark && swift build -c release --product provider-fakes
//   N=20000 CONCURRENCY=128 .build/release/SenderBenchmark
//
// PROVIDER_FAKES names the provider-fakes executable (default: next to this one).

try await SenderBench.run()

/// Everything in a nonisolated scope: top-level variables of main.swift belong to the main
/// actor, and hundreds of concurrent calls hopping to it is not what is being measured.
enum SenderBench {
    static func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let count = Int(environment["N"] ?? "") ?? 20_000
        let concurrency = Int(environment["CONCURRENCY"] ?? "") ?? 128
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }

        func note(_ text: String) { FileHandle.standardError.write(Data("sender-benchmark: \(text)\n".utf8)) }
        note("starting")
        let fake = try FakeProcess.start(executable: environment["PROVIDER_FAKES"])
        defer { fake.stop() }
        let providers = try await fake.senderEnvironment()
        note("provider-fakes (pid \(fake.pid)) APNs at \(providers["SENDER_APNS_ENDPOINT"] ?? "?")")
        // SENDER_APNS_CONNECTIONS, when set, is passed on (the pool's connection limit).
        let tuning = environment.filter { $0.key == "SENDER_APNS_CONNECTIONS" }
        let settings = try ProviderSettings.fromEnvironment(
            providers.merging(["SENDER_REQUEST_TIMEOUT_MS": "10000"]) { $1 }.merging(tuning) { $1 })
        let effect = try ProviderEffect(settings: settings, logger: Logger(label: "sender-benchmark"))
        let expiry = Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000)

        func attempt(_ index: Int) -> SendAttempt {
            SendAttempt(
                id: "bench-\(index)~push~phone~1", userId: "u\(index % 1000)", deliveryId: "bench-\(index)", notificationId: "n\(index)",
                attempt: 1, provider: .apns, deviceId: "phone", token: "a\(index % 5000)", app: "com.fitcircle.app",
                notification: "fitcircle.daily_checkin", category: "REMINDER", title: "Daily Check-in Reminder",
                body: "Complete your check-in to keep your 14-day streak!", deepLink: "fitcircle://checkin", expiresAt: expiry)
        }

        func seconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }

        /// Every send with at most `concurrency` in flight; returns how many were accepted.
        func saturate(from first: Int, count: Int) async -> Int {
            await withTaskGroup(of: Bool.self) { group in
                var next = first, accepted = 0
                for _ in 0..<min(concurrency, count) {
                    let index = next
                    group.addTask { await effect.perform(attempt(index)).outcome == .accepted }
                    next += 1
                }
                for await ok in group {
                    if ok { accepted += 1 }
                    if next < first + count {
                        let index = next
                        group.addTask { await effect.perform(attempt(index)).outcome == .accepted }
                        next += 1
                    }
                }
                return accepted
            }
        }

        // Warm-up: connections, TLS, the provider token.
        let warm = await effect.perform(attempt(0))
        note("first call: \(warm.outcome.rawValue) \(warm.reason ?? "")")
        _ = await saturate(from: 1, count: min(2000, count))
        note("warmed up")

        let clock = ContinuousClock()
        note("load average before: \(LoadAverage.read())")
        let clientBefore = CPUTime.ofThisProcess(), fakeBefore = try CPUTime.of(pid: fake.pid)
        let start = clock.now
        let accepted = await saturate(from: 1_000_000, count: count)
        let elapsed = seconds(clock.now - start)
        let client = CPUTime.ofThisProcess() - clientBefore, fakeCPU = try CPUTime.of(pid: fake.pid) - fakeBefore
        let rate = Double(count) / elapsed
        func perThousand(_ cpu: Double) -> String { String(format: "%.1f", cpu / Double(count) * 1000 * 1000) }
        print("RESULT sender_apns_sends_per_second \(Int(rate)) (\(accepted)/\(count) accepted, concurrency \(concurrency))")
        print("RESULT sender_apns_client_cpu_ms_per_1000_sends \(perThousand(client)) (this process, getrusage)")
        print("RESULT sender_apns_fake_cpu_ms_per_1000_sends \(perThousand(fakeCPU)) (provider-fakes, /proc/\(fake.pid)/stat)")

        // Paced at half the measured rate: latency of each call, open loop.
        let paced = min(count, Int(rate / 2 * 5))  // about five seconds
        let interval = 2.0 / rate
        let latencies = await withTaskGroup(of: Double.self) { group in
            let pacedStart = clock.now
            for index in 0..<paced {
                let due = pacedStart + .seconds(interval * Double(index))
                if due > clock.now { try? await Task.sleep(until: due, clock: clock) }
                group.addTask {
                    let sent = clock.now
                    _ = await effect.perform(attempt(2_000_000 + index))
                    return seconds(clock.now - sent)
                }
            }
            var all: [Double] = []
            for await latency in group { all.append(latency) }
            return all.sorted()
        }
        func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print("RESULT sender_apns_latency_ms_at_half_rate p50 \(String(format: "%.2f", percentile(0.5) * 1000)) p99 \(String(format: "%.2f", percentile(0.99) * 1000)) (\(paced) sends at \(Int(rate / 2))/s)")

        print("RESULT sender_load_average \(LoadAverage.read()) (/proc/loadavg at the end)")
        try await effect.shutdown()
    }
}

/// The machine's load averages (1, 5, 15 minutes): other work on the same cores.
enum LoadAverage {
    static func read() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}
