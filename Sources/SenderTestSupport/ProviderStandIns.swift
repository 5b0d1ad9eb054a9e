public import Foundation

/// The three stand-in providers (APNs, FCM with its token endpoint, the email API) served side
/// by side with one test CA, and the files a sender needs to use them written to a directory:
/// what the `provider-fakes` executable runs for the compose stack, the benchmark and the tests
/// that start it as a process.
///
/// Files in `directory` (`SENDER_*` variables of README "The sender"):
/// - `ca.pem`: the test CA's root (`SENDER_CA_FILE`);
/// - `apns.p8`: the APNs signing key (`SENDER_APNS_KEY_FILE`);
/// - `fcm.json`: the service-account JSON, `token_uri` at the FCM stand-in
///   (`SENDER_FCM_SERVICE_ACCOUNT_FILE`);
/// - `email-key`: the email API key (`SENDER_EMAIL_API_KEY_FILE`);
/// - `sender.env`: every `SENDER_*` variable for these stand-ins, one `NAME=value` a line,
///   written last (by rename), once the three are listening: its presence means ready.
///
/// Keys and the CA are made anew at every start: a sender started against an earlier run's
/// files must be restarted too.
public final class ProviderStandIns: Sendable {
    public struct Configuration: Sendable {
        /// The address the three listen on (`0.0.0.0` in a container).
        public var host: String
        /// The name senders reach them by; the certificate is valid for it and `localhost`.
        public var publicHost: String
        /// 0: any free port (written to `sender.env`).
        public var apnsPort: Int
        public var fcmPort: Int
        public var emailPort: Int
        public var apnsKeyId: String
        public var apnsTeamId: String
        public var fcmProjectId: String
        /// Where the files go; created if missing.
        public var directory: URL

        public init(
            directory: URL, host: String = "127.0.0.1", publicHost: String = "localhost", apnsPort: Int = 0, fcmPort: Int = 0,
            emailPort: Int = 0, apnsKeyId: String = "KEY1234567", apnsTeamId: String = "TEAM123456",
            fcmProjectId: String = "fitcircle-test"
        ) {
            self.directory = directory; self.host = host; self.publicHost = publicHost
            self.apnsPort = apnsPort; self.fcmPort = fcmPort; self.emailPort = emailPort
            self.apnsKeyId = apnsKeyId; self.apnsTeamId = apnsTeamId; self.fcmProjectId = fcmProjectId
        }
    }

    /// The provider a request went to, for `observe`.
    public enum Provider: String, Sendable { case apns, fcm, email }

    public let apns: FakeAPNs
    public let fcm: FakeFCM
    public let email: FakeEmailAPI
    public let apnsServer: FakeHTTPServer
    public let fcmServer: FakeHTTPServer
    public let emailServer: FakeHTTPServer
    /// The `SENDER_*` variables for these stand-ins (also in `sender.env`).
    public let senderEnvironment: [String: String]

    private init(
        apns: FakeAPNs, fcm: FakeFCM, email: FakeEmailAPI, servers: (FakeHTTPServer, FakeHTTPServer, FakeHTTPServer),
        senderEnvironment: [String: String]
    ) {
        self.apns = apns; self.fcm = fcm; self.email = email
        (apnsServer, fcmServer, emailServer) = servers
        self.senderEnvironment = senderEnvironment
    }

    /// Starts the three and writes the files. `observe` sees every request and its answer
    /// (the executable logs them); it must not block.
    public static func start(
        _ configuration: Configuration,
        observe: (@Sendable (Provider, FakeRequest, FakeResponse) -> Void)? = nil
    ) async throws -> ProviderStandIns {
        let directory = configuration.directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // An earlier run's `sender.env` would say ready before this run's files are written.
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("sender.env"))

        let authority = try TestCertificateAuthority(hostnames: [configuration.publicHost])
        let apns = FakeAPNs(keyId: configuration.apnsKeyId, teamId: configuration.apnsTeamId)
        let fcm = try FakeFCM(projectId: configuration.fcmProjectId)
        let email = FakeEmailAPI()

        func serve(_ provider: Provider, port: Int, _ respond: @escaping @Sendable (FakeRequest) async -> FakeResponse) async throws
            -> FakeHTTPServer
        {
            try await FakeHTTPServer.start(
                authority: authority, host: configuration.host, port: port, publicHost: configuration.publicHost
            ) { request in
                let response = await respond(request)
                observe?(provider, request, response)
                return response
            }
        }
        let apnsServer = try await serve(.apns, port: configuration.apnsPort, apns.respond)
        let fcmServer: FakeHTTPServer, emailServer: FakeHTTPServer
        do {
            fcmServer = try await serve(.fcm, port: configuration.fcmPort, fcm.respond)
        } catch {
            try? await apnsServer.stop()
            throw error
        }
        do {
            emailServer = try await serve(.email, port: configuration.emailPort) { email.respond($0) }
        } catch {
            try? await apnsServer.stop()
            try? await fcmServer.stop()
            throw error
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let environment: [String: String] = [
            "SENDER_APNS_ENDPOINT": apnsServer.baseURL, "SENDER_APNS_KEY_ID": apns.keyId, "SENDER_APNS_TEAM_ID": apns.teamId,
            "SENDER_APNS_KEY_FILE": path("apns.p8"),
            "SENDER_FCM_ENDPOINT": fcmServer.baseURL, "SENDER_FCM_SERVICE_ACCOUNT_FILE": path("fcm.json"),
            "SENDER_EMAIL_ENDPOINT": emailServer.baseURL, "SENDER_EMAIL_API_KEY_FILE": path("email-key"),
            "SENDER_EMAIL_FROM": "FitCircle <reminders@fitcircle.test>",
            "SENDER_EMAIL_UNSUBSCRIBE_URL": "https://fitcircle.test/unsubscribe?user={user_id}",
            "SENDER_CA_FILE": path("ca.pem"),
        ]
        let standIns = ProviderStandIns(
            apns: apns, fcm: fcm, email: email, servers: (apnsServer, fcmServer, emailServer), senderEnvironment: environment)
        do {
            try write(authority.rootPEM, to: directory, "ca.pem")
            try write(apns.signingKeyPEM, to: directory, "apns.p8")
            try write(fcm.serviceAccountJSON(baseURL: fcmServer.baseURL), to: directory, "fcm.json")
            try write(email.apiKey + "\n", to: directory, "email-key")
            try write(senderEnvFile(environment), to: directory, "sender.env")
        } catch {
            try? await standIns.stop()
            throw error
        }
        return standIns
    }

    /// Stops the three servers (the files stay).
    public func stop() async throws {
        try await apnsServer.stop()
        try await fcmServer.stop()
        try await emailServer.stop()
    }

    /// Reads a `sender.env` as written here: `NAME=value` lines.
    public static func readSenderEnv(_ text: String) -> [String: String] {
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return environment
    }

    private static func senderEnvFile(_ environment: [String: String]) -> String {
        "# The stand-in providers' SENDER_* variables (provider-fakes).\n"
            + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)\n" }.joined()
    }

    /// Writes by rename, readable by its owner only (the keys are secrets in form, if not in
    /// substance).
    private static func write(_ text: String, to directory: URL, _ name: String) throws {
        let temporary = directory.appendingPathComponent(".\(name).partial")
        try? FileManager.default.removeItem(at: temporary)
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path]) }
        guard rename(temporary.path, directory.appendingPathComponent(name).path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: directory.appendingPathComponent(name).path])
        }
    }
}
