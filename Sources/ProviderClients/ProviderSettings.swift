public import Foundation

/// The providers' endpoints and credentials, from the environment and the files it names
/// (issue 17: never from the code). A provider left unconfigured answers every attempt for it
/// as `rejected` ("provider not configured"), so a misconfigured deployment shows in the
/// receipts and metrics instead of retrying for a day.
public struct ProviderSettings: Sendable {
    public struct APNs: Sendable {
        /// `https://api.push.apple.com` (or the sandbox, or a stand-in).
        public var endpoint: String
        public var keyId: String
        public var teamId: String
        /// The `.p8` signing key's PEM.
        public var signingKey: Secret
        /// A provider token is renewed after this long (Apple: between 20 and 60 minutes).
        public var tokenLifetime: TimeInterval

        public init(endpoint: String, keyId: String, teamId: String, signingKey: Secret, tokenLifetime: TimeInterval = 40 * 60) {
            self.endpoint = endpoint; self.keyId = keyId; self.teamId = teamId; self.signingKey = signingKey
            self.tokenLifetime = tokenLifetime
        }
    }

    public struct FCM: Sendable {
        /// `https://fcm.googleapis.com` (or a stand-in).
        public var endpoint: String
        public var serviceAccount: ServiceAccount

        public init(endpoint: String, serviceAccount: ServiceAccount) { self.endpoint = endpoint; self.serviceAccount = serviceAccount }
    }

    public struct Email: Sendable {
        /// `https://api.resend.com` (or any API that speaks Resend's `POST /emails`).
        public var endpoint: String
        public var apiKey: Secret
        /// `From:`, e.g. `FitCircle <reminders@fitcircle.app>`.
        public var from: String
        /// The one-click unsubscribe URL (RFC 8058); `{user_id}` is replaced by the user's id.
        public var unsubscribeURL: String

        public init(endpoint: String, apiKey: Secret, from: String, unsubscribeURL: String) {
            self.endpoint = endpoint; self.apiKey = apiKey; self.from = from; self.unsubscribeURL = unsubscribeURL
        }
    }

    public var apns: APNs?
    public var fcm: FCM?
    public var email: Email?
    /// Extra PEM trust roots (a private CA, or the stand-in providers' test CA).
    public var extraTrustRootsPEM: String?
    /// How long one provider call may take, connection included.
    public var requestTimeout: TimeInterval
    /// At most this many HTTP/2 connections to APNs; each carries as many concurrent streams
    /// as APNs allows (its SETTINGS_MAX_CONCURRENT_STREAMS), and another opens only when all
    /// are full.
    public var apnsConnections: Int

    public init(
        apns: APNs? = nil, fcm: FCM? = nil, email: Email? = nil, extraTrustRootsPEM: String? = nil, requestTimeout: TimeInterval = 10,
        apnsConnections: Int = 4
    ) {
        self.apns = apns; self.fcm = fcm; self.email = email; self.extraTrustRootsPEM = extraTrustRootsPEM
        self.requestTimeout = requestTimeout; self.apnsConnections = apnsConnections
    }

    /// The variables the sender reads, with what they mean (README "Variables").
    public static let variables: [(name: String, meaning: String)] = [
        ("SENDER_APNS_ENDPOINT", "APNs base URL, e.g. https://api.push.apple.com; unset: no APNs"),
        ("SENDER_APNS_KEY_ID", "the APNs signing key's id (JWT kid)"),
        ("SENDER_APNS_TEAM_ID", "the Apple team id (JWT iss)"),
        ("SENDER_APNS_KEY_FILE", "path of the APNs .p8 signing key (PEM)"),
        ("SENDER_FCM_ENDPOINT", "FCM base URL (default https://fcm.googleapis.com)"),
        ("SENDER_FCM_SERVICE_ACCOUNT_FILE", "path of the Google service-account JSON; unset: no FCM"),
        ("SENDER_EMAIL_ENDPOINT", "Resend-compatible API base URL (default https://api.resend.com)"),
        ("SENDER_EMAIL_API_KEY_FILE", "path of the file holding the email API key; unset: no email"),
        ("SENDER_EMAIL_FROM", "the From: of sent email"),
        ("SENDER_EMAIL_UNSUBSCRIBE_URL", "one-click unsubscribe URL, {user_id} replaced"),
        ("SENDER_CA_FILE", "extra PEM trust roots for the providers' TLS (a stand-in's CA)"),
        ("SENDER_REQUEST_TIMEOUT_MS", "one provider call's limit (default 10000)"),
        ("SENDER_APNS_CONNECTIONS", "at most this many HTTP/2 connections to APNs (default 4; another opens when all streams are busy)"),
    ]

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads the settings; `readFile` is injectable for tests. Errors name the variable and
    /// the file, never a secret.
    public static func fromEnvironment(
        _ environment: [String: String], readFile: (String) throws -> String = { try String(contentsOfFile: $0, encoding: .utf8) }
    ) throws -> ProviderSettings {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        func required(_ name: String, for provider: String) throws -> String {
            guard let text = value(name) else { throw Invalid(description: "\(name) is required when \(provider) is configured") }
            return text
        }
        func file(_ name: String) throws -> String {
            let path = try required(name, for: name)
            do { return try readFile(path) } catch { throw Invalid(description: "\(name): cannot read \(path): \(error)") }
        }
        var settings = ProviderSettings()
        if let endpoint = value("SENDER_APNS_ENDPOINT") {
            settings.apns = APNs(
                endpoint: endpoint, keyId: try required("SENDER_APNS_KEY_ID", for: "APNs"),
                teamId: try required("SENDER_APNS_TEAM_ID", for: "APNs"), signingKey: Secret(try file("SENDER_APNS_KEY_FILE")))
        }
        if value("SENDER_FCM_SERVICE_ACCOUNT_FILE") != nil {
            let json = try file("SENDER_FCM_SERVICE_ACCOUNT_FILE")
            settings.fcm = FCM(
                endpoint: value("SENDER_FCM_ENDPOINT") ?? "https://fcm.googleapis.com",
                serviceAccount: try ServiceAccount(json: Data(json.utf8)))
        }
        if value("SENDER_EMAIL_API_KEY_FILE") != nil {
            let key = try file("SENDER_EMAIL_API_KEY_FILE").trimmingCharacters(in: .whitespacesAndNewlines)
            settings.email = Email(
                endpoint: value("SENDER_EMAIL_ENDPOINT") ?? "https://api.resend.com", apiKey: Secret(key),
                from: try required("SENDER_EMAIL_FROM", for: "email"),
                unsubscribeURL: try required("SENDER_EMAIL_UNSUBSCRIBE_URL", for: "email"))
        }
        if value("SENDER_CA_FILE") != nil { settings.extraTrustRootsPEM = try file("SENDER_CA_FILE") }
        if let timeout = value("SENDER_REQUEST_TIMEOUT_MS") {
            guard let milliseconds = Int(timeout), milliseconds > 0 else {
                throw Invalid(description: "SENDER_REQUEST_TIMEOUT_MS is '\(timeout)', not a positive number of milliseconds")
            }
            settings.requestTimeout = TimeInterval(milliseconds) / 1000
        }
        if let connections = value("SENDER_APNS_CONNECTIONS") {
            guard let count = Int(connections), (1...64).contains(count) else {
                throw Invalid(description: "SENDER_APNS_CONNECTIONS is '\(connections)', not a number from 1 to 64")
            }
            settings.apnsConnections = count
        }
        return settings
    }
}

/// The fields of a Google service-account key file the OAuth2 assertion needs.
public struct ServiceAccount: Sendable {
    public var projectId: String
    public var clientEmail: String
    public var privateKeyId: String?
    public var privateKey: Secret
    public var tokenURI: String

    public init(projectId: String, clientEmail: String, privateKeyId: String?, privateKey: Secret, tokenURI: String) {
        self.projectId = projectId; self.clientEmail = clientEmail; self.privateKeyId = privateKeyId
        self.privateKey = privateKey; self.tokenURI = tokenURI
    }

    private struct File: Decodable {
        var project_id: String
        var client_email: String
        var private_key_id: String?
        var private_key: String
        var token_uri: String?
    }

    public init(json: Data) throws {
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: json) } catch {
            throw ProviderSettings.Invalid(description: "the service-account JSON lacks project_id, client_email or private_key")
        }
        self.init(
            projectId: file.project_id, clientEmail: file.client_email, privateKeyId: file.private_key_id,
            privateKey: Secret(file.private_key), tokenURI: file.token_uri ?? "https://oauth2.googleapis.com/token")
    }
}
