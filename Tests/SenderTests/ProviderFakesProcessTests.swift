import FleetModel
import Foundation
import Logging
import ProviderClients
import SenderCore
import SenderTestSupport
import Testing

/// The `provider-fakes` executable (compose's stand-in providers, SenderBenchmark's provider
/// process) as a process: it writes its CA, keys and `sender.env`, and the sender's client,
/// configured from nothing but those files, sends a push on each platform and an email through
/// it; a signing key it did not issue is refused; SIGTERM stops it with status 0.
@Suite(.timeLimit(.minutes(6))) struct ProviderFakesProcessTests {
    static func executable() throws -> URL {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("provider-fakes") }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) },
                            "provider-fakes not built next to the tests (looked in \(candidates.map(\.path)))")
    }

    /// Waits for `sender.env`, which the process writes once its three servers listen.
    static func senderEnvironment(in directory: URL, of process: Process) async throws -> [String: String] {
        let file = directory.appendingPathComponent("sender.env")
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: file.path) {
            try #require(process.isRunning, "provider-fakes exited with \(process.terminationStatus) before it was ready")
            try #require(ContinuousClock.now < deadline, "provider-fakes wrote no sender.env in 30 s")
            try await Task.sleep(for: .milliseconds(50))
        }
        return ProviderStandIns.readSenderEnv(try String(contentsOf: file, encoding: .utf8))
    }

    @Test func theSenderSendsAPushAndAnEmailThroughTheProcessWithOnlyItsFiles() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("provider-fakes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = try Self.executable()
        process.arguments = ["--directory", directory.path]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let environment = try await Self.senderEnvironment(in: directory, of: process)
        #expect(environment["SENDER_APNS_ENDPOINT"]?.hasPrefix("https://localhost:") == true)
        let keyFile = try #require(environment["SENDER_APNS_KEY_FILE"])
        let permissions = try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int
        #expect(permissions == 0o600)

        let settings = try ProviderSettings.fromEnvironment(environment)
        let effect = try ProviderEffect(settings: settings, logger: Logger(label: "provider-fakes-tests"))
        let push = await effect.perform(ProviderClientTests.attempt(.apns, token: "a1b2c3", id: "d1~push~phone~1"))
        let android = await effect.perform(ProviderClientTests.attempt(.fcm, token: "fcm-token-1", id: "d1~push~tablet~1"))
        let email = await effect.perform(ProviderClientTests.attempt(.email, token: "alex@example.com", id: "d1~email~mail~1"))
        try await effect.shutdown()
        #expect(push.outcome == .accepted && push.status == 200 && push.providerId != nil, "APNs: \(push)")
        #expect(android.outcome == .accepted && android.providerId?.hasPrefix("projects/fitcircle-test/messages/") == true, "FCM: \(android)")
        #expect(email.outcome == .accepted && email.providerId != nil, "email: \(email)")

        // A key the stand-in did not issue: APNs refuses the provider token, as Apple would.
        let otherKey = FakeAPNs().signingKeyPEM
        let forged = try ProviderSettings.fromEnvironment(environment) { path in
            path == keyFile ? otherKey : try String(contentsOfFile: path, encoding: .utf8)
        }
        let forger = try ProviderEffect(settings: forged, logger: Logger(label: "provider-fakes-tests"))
        let refused = await forger.perform(ProviderClientTests.attempt(.apns, token: "a1b2c3", id: "d2~push~phone~1"))
        try await forger.shutdown()
        #expect(refused.status == 403 && refused.reason == "InvalidProviderToken", "\(refused)")

        process.terminate()
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning && process.terminationStatus == 0)
    }
}
