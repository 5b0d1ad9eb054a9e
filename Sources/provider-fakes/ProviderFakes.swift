import ArgumentParser
import Foundation
import SenderTestSupport

/// Serves the stand-in providers (SenderTestSupport) for a sender that has no real credentials:
/// the compose stack's `provider-fakes` service, SenderBenchmark's provider in a process of its
/// own, and the tests that start it as one. Test code: it is built into the `dev` image target
/// of deploy/Dockerfile, never into the runtime image.
///
/// It writes the CA, the keys and `sender.env` (every `SENDER_*` variable for these stand-ins)
/// to `--directory`, then serves until SIGTERM or SIGINT.
@main
struct ProviderFakesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider-fakes",
        abstract: "Serve stand-in APNs, FCM and email APIs (TLS + HTTP/2, a test CA) for a sender without real credentials.",
        discussion: """
            Files written to --directory: ca.pem, apns.p8, fcm.json, email-key, and sender.env (written last, \
            once all three listen). Keys and CA are new at every start; restart the sender with it.
            """)

    @Option(help: "Directory the CA, keys and sender.env are written to.")
    var directory: String

    @Option(help: "Address to listen on (0.0.0.0 in a container).")
    var host = "127.0.0.1"

    @Option(help: "Host name senders connect to; the certificate is valid for it and localhost.")
    var publicHost = "localhost"

    @Option(help: "APNs port (0: any free port, see sender.env).")
    var apnsPort = 0

    @Option(help: "FCM port (token endpoint and messages:send; 0: any free port).")
    var fcmPort = 0

    @Option(help: "Email API port (0: any free port).")
    var emailPort = 0

    @Option(help: "APNs signing key id (the provider JWT's kid).")
    var apnsKeyId = "KEY1234567"

    @Option(help: "Apple team id (the provider JWT's iss).")
    var apnsTeamId = "TEAM123456"

    @Option(help: "FCM project id.")
    var fcmProjectId = "fitcircle-test"

    @Flag(help: "Print one line per request: provider, status, path (device tokens shortened).")
    var logRequests = false

    func run() async throws {
        let configuration = ProviderStandIns.Configuration(
            directory: URL(fileURLWithPath: directory), host: host, publicHost: publicHost, apnsPort: apnsPort, fcmPort: fcmPort,
            emailPort: emailPort, apnsKeyId: apnsKeyId, apnsTeamId: apnsTeamId, fcmProjectId: fcmProjectId)
        let stopped = SignalStream(SIGTERM, SIGINT)
        let standIns = try await ProviderStandIns.start(configuration, observe: logRequests ? Self.log : nil)
        Self.say("APNs \(standIns.apnsServer.baseURL), FCM \(standIns.fcmServer.baseURL), email \(standIns.emailServer.baseURL); files in \(directory)")
        let signal = await stopped.next()
        Self.say("signal \(signal), stopping")
        try await standIns.stop()
    }

    /// One line per request; an APNs path carries the device token, shortened to its start.
    @Sendable static func log(_ provider: ProviderStandIns.Provider, _ request: FakeRequest, _ response: FakeResponse) {
        var path = request.path
        if path.hasPrefix("/3/device/") { path = "/3/device/" + path.dropFirst("/3/device/".count).prefix(6) + "…" }
        say("\(provider.rawValue) \(response.status) \(request.method) \(path)")
    }

    /// One line on standard output, written at once (not buffered: `docker compose logs` shows it).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data("provider-fakes: \(line)\n".utf8))
    }
}
