import FleetModel
import SenderCore
import Testing

/// The sender's records on the wire: they round-trip, and malformed ones are refused with a
/// reason an operator can act on, so the runtime dead-letters them (DESIGN.md principle 7).
@Suite struct SenderRecordTests {
    static let records: [FleetRecord] = [
        SenderHarness.device("phone", .ios),
        .sender(.deviceUnregistered(DeviceUnregistered(id: "r2", userId: "u1", deviceId: "phone"))),
        .sender(.deviceInvalidated(DeviceInvalidated(
            id: "r3", userId: "u1", deviceId: "phone", reason: "Unregistered", attemptId: "d1~push~phone~1", registrationId: "r1"))),
        .sender(.attempt(SendAttempt(
            id: "d1~push~phone~1", userId: "u1", deliveryId: "d1", notificationId: "n1", attempt: 1, provider: .apns,
            deviceId: "phone", token: "abc", app: "com.fitcircle.app", notification: "fitcircle.daily_checkin", category: "REMINDER",
            title: "T", body: "B", deepLink: "fitcircle://checkin", expiresAt: Timestamp(secondsSinceEpoch: 1_790_000_000)))),
        .sender(.result(SendResult(
            userId: "u1", attemptId: "d1~push~phone~1", deliveryId: "d1", deviceId: "phone", provider: .apns, outcome: .retryable,
            status: 429, reason: "TooManyRequests", retryAfterMs: 30_000))),
        .sender(.receipt(Receipt(
            id: "r4", userId: "u1", deliveryId: "d1", notificationId: "n1", channel: .push, status: .tokenInvalid, attempts: 1,
            provider: .apns, reason: "Unregistered"))),
    ]

    @Test(arguments: records)
    func recordsRoundTrip(_ record: FleetRecord) throws {
        let bytes = RecordCodec.encode(record)
        #expect(try RecordCodec.decode(bytes) == record)
    }

    @Test func eachRecordBelongsOnItsTopic() throws {
        let registration = RecordCodec.encode(SenderHarness.device("phone", .ios))
        #expect(try RecordCodec.decode(registration, topic: Topics.devices).type == "device.registered")
        #expect(try RecordCodec.decode(registration, topic: Topics.senderInbox).type == "device.registered")
        #expect(throws: RecordError("type 'device.registered' does not belong on topic 'rin.notify.deliveries'")) {
            try RecordCodec.decode(registration, topic: Topics.deliveries)
        }
        let receipt = RecordCodec.encode(Self.records[5])
        #expect(throws: RecordError.self) { try RecordCodec.decode(receipt, topic: Topics.senderInbox) }
        #expect(try RecordCodec.decode(receipt, topic: Topics.receipts).type == "receipt")
    }

    static let malformed: [(json: String, error: String)] = [
        (#"{"v":1,"type":"device.registered","id":"r","user_id":"u","device_id":"d","platform":"ios","app":"a"}"#,
         "missing required field 'token'"),
        (#"{"v":1,"type":"device.registered","id":"r","user_id":"u","device_id":"","platform":"ios","token":"t","app":"a"}"#,
         "field 'device_id' must not be empty"),
        (#"{"v":1,"type":"device.registered","id":"r","user_id":"u","device_id":"d","platform":"ios","token":"t","app":""}"#,
         "field 'app' must not be empty"),
        (#"{"v":1,"type":"device.registered","id":"r","user_id":"u","device_id":"d","platform":"ios","token":"a b","app":"a"}"#,
         "field 'token' contains whitespace"),
        (#"{"v":1,"type":"device.registered","id":"r","user_id":"u","device_id":"d","platform":"email","token":"nobody","app":""}"#,
         "field 'token' is 'nobody', not an email address"),
        (#"{"v":1,"type":"device.unregistered","id":"r","user_id":"u"}"#, "missing required field 'device_id'"),
        (#"{"v":1,"type":"device.registered","id":"r","device_id":"d","platform":"ios","token":"t","app":"a"}"#,
         "missing required field 'user_id'"),
    ]

    @Test(arguments: malformed.indices)
    func malformedDeviceRecordsAreRefusedWithTheirReason(_ index: Int) {
        let (json, error) = Self.malformed[index]
        #expect(throws: RecordError(error)) { try RecordCodec.decode(Array(json.utf8), topic: Topics.devices) }
    }

    @Test func anUnknownPlatformIsRefused() {
        let json = #"{"v":1,"type":"device.registered","id":"r","user_id":"u","device_id":"d","platform":"windows","token":"t","app":"a"}"#
        #expect(throws: RecordError.self) { try RecordCodec.decode(Array(json.utf8), topic: Topics.devices) }
    }

    @Test func anOversizedTokenIsRefused() {
        let token = String(repeating: "a", count: DeviceRegistered.maximumTokenLength + 1)
        let record = FleetRecord.sender(.deviceRegistered(DeviceRegistered(
            id: "r", userId: "u", deviceId: "d", platform: .ios, token: token, app: "a")))
        #expect(throws: RecordError.self) { try RecordCodec.decode(RecordCodec.encode(record), topic: Topics.devices) }
    }
}
