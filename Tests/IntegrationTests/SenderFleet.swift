import DeliveryPolicy
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import SenderTestSupport
import Testing

/// The sender-worker executable on the local broker, configured like production from `SENDER_*`
/// variables and files, against the stand-in providers (TLS + HTTP/2 with a CA made for the run)
/// running in the test process: what `SenderFleetTests` drives.
struct SenderFleet {
    let harness: FleetHarness
    /// The three stand-ins and their files, as `provider-fakes` serves them.
    let standIns: ProviderStandIns
    var apns: FakeAPNs { standIns.apns }
    var fcm: FakeFCM { standIns.fcm }
    var email: FakeEmailAPI { standIns.email }
    let directory: URL
    let processes: WorkerProcesses
    static let slot = WorkerProcesses.Slot(worker: .sender, instance: 0)

    /// The profile's `sender:` section: retries in fractions of a second so the suite stays short.
    static let senderSection = """

        sender:
          max_tries: 3
          max_age_minutes: 30
          base_backoff_ms: 200
          max_backoff_ms: 1000
          answer_grace_seconds: 60

        """

    /// - Parameter overrides: more variables for the process (they win).
    static func make(partitions: Int32 = 2, overrides: [String: String] = [:]) async throws -> SenderFleet {
        let harness = try await FleetHarness.make(partitions: partitions)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sender-fleet-\(UUID().uuidString.prefix(8))")
        let standIns = try await ProviderStandIns.start(.init(directory: directory))
        try Data((try PolicyProfile.shippedYAML("rin") + senderSection).utf8).write(to: directory.appendingPathComponent("profile.yaml"))
        let variables = standIns.senderEnvironment.merging([
            "FLEET_PROFILE": directory.appendingPathComponent("profile.yaml").path, "FLEET_TICK_INTERVAL_MS": "200",
            // Far above any answer the fakes give: on a loaded CI machine a call can take seconds,
            // and a timed-out call the provider accepted is retried as a new attempt (another
            // send), which these scenarios do not test.
            "FLEET_LOG_LEVEL": "notice", "SENDER_REQUEST_TIMEOUT_MS": "30000",
        ]) { $1 }
        let environment = harness.environment(for: .sender, variables.merging(overrides) { $1 })
        let processes = try WorkerProcesses(
            slots: [slot], logDirectory: directory.appendingPathComponent("logs"), environment: { _ in environment })
        return SenderFleet(harness: harness, standIns: standIns, directory: directory, processes: processes)
    }

    func start() throws { try processes.start(Self.slot) }

    /// Kills the worker, stops the fakes, deletes the topics and the files.
    func tearDown() async {
        processes.killAll()
        try? await standIns.stop()
        await harness.tearDown()
        try? FileManager.default.removeItem(at: directory)
    }

    var logTail: String { processes.logTail(Self.slot, lines: 30) }

    // MARK: Records

    static func device(_ user: String, _ deviceId: String, _ platform: DevicePlatform, token: String) -> FleetRecord {
        let app = platform == .ios ? "com.fitcircle.app" : platform == .android ? "fitcircle-test" : ""
        return .sender(.deviceRegistered(DeviceRegistered(
            id: "reg-\(user)-\(deviceId)", userId: user, deviceId: deviceId, platform: platform, token: token, app: app)))
    }

    static func delivery(_ id: String, user: String, channel: DeliveryChannel = .push, notification: String = "fitcircle.daily_checkin") -> FleetRecord {
        .delivery(Delivery(
            id: id, userId: user, notificationId: "n-\(id)", channel: channel, notification: notification, category: "REMINDER",
            title: "Daily Check-in Reminder", body: "Keep your streak!", deepLink: "fitcircle://checkin", mergedIntents: ["i-\(id)"]))
    }

    func produce(_ records: [FleetRecord], to topic: String) async throws {
        try await harness.produce(records.map { ($0, Timestamp.wallClockNow) }, to: topic)
    }

    /// Waits until the sender's inbox holds `count` records of `types` (forwarded by its ingest),
    /// before any delivery is produced, so the deliveries find the devices and settings.
    func waitForInbox(_ count: Int, types: Set<String>) async throws {
        let forwarded = try await harness.read(Topics.senderInbox, count: count, timeout: .seconds(30))
        let seen = forwarded.filter { types.contains(Self.type(of: $0) ?? "") }.count
        #expect(seen >= count, "the sender forwarded \(seen) of \(count) records into its inbox; log:\n\(logTail)")
    }

    static func type(of message: KafkaMessage) -> String? {
        message.value.flatMap { try? RecordCodec.decode($0) }?.type
    }

    /// The distinct receipts (by id: a crash may repeat a copy), waiting until `count` arrived.
    func receipts(_ count: Int, timeout: Duration = .seconds(60)) async throws -> [Receipt] {
        let deadline = ContinuousClock.now + timeout
        var receipts: [String: Receipt] = [:]
        repeat {
            let records = try await harness.records(Topics.receipts, count: count, timeout: .seconds(2))
            for case .sender(.receipt(let receipt)) in records { receipts[receipt.id] = receipt }
            if receipts.count >= count { break }
        } while ContinuousClock.now < deadline
        #expect(receipts.count >= count, "\(receipts.count) of \(count) receipts arrived; log:\n\(logTail)")
        return receipts.values.sorted { $0.id < $1.id }
    }

    /// The receipts of `delivery`, by channel.
    static func of(_ delivery: String, in receipts: [Receipt]) -> [DeliveryChannel: Receipt] {
        Dictionary(receipts.filter { $0.deliveryId == delivery }.map { ($0.channel, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

extension Timestamp {
    /// The wall clock, for records a test produces as an app would (the sender reads time from the log).
    static var wallClockNow: Timestamp { Timestamp(millisecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1000)) }
}
