public import FleetModel

/// What a notification says, whichever provider carries it.
public struct MessageContent: Hashable, Sendable {
    public var deliveryId: String
    public var notification: String
    public var category: String
    public var title: String
    public var body: String
    public var deepLink: String

    public init(deliveryId: String, notification: String, category: String, title: String, body: String, deepLink: String) {
        self.deliveryId = deliveryId; self.notification = notification; self.category = category; self.title = title
        self.body = body; self.deepLink = deepLink
    }

    public init(_ delivery: Delivery) {
        self.init(
            deliveryId: delivery.id, notification: delivery.notification, category: delivery.category, title: delivery.title,
            body: delivery.body, deepLink: delivery.deepLink)
    }

    public init(_ attempt: SendAttempt) {
        self.init(
            deliveryId: attempt.deliveryId, notification: attempt.notification, category: attempt.category, title: attempt.title,
            body: attempt.body, deepLink: attempt.deepLink)
    }
}

/// The bodies the providers are sent, as canonical JSON (sorted keys), so the size checked by
/// the fold is the size the effect stage sends. Shapes follow seed 002 "Technical
/// Implementation".
public enum ProviderPayloads {
    /// APNs refuses a payload over 4096 bytes (413 `PayloadTooLarge`).
    public static let apnsLimit = 4096
    /// FCM refuses a message over 4096 bytes (400 `INVALID_ARGUMENT`, "message too big").
    public static let fcmLimit = 4096

    /// The APNs request body: `aps.alert` and the app's `data`.
    public static func apns(_ content: MessageContent) -> [UInt8] {
        encode(APNsBody(
            aps: .init(alert: .init(title: content.title, body: content.body), sound: "default"),
            data: AppData(content)))
    }

    /// The FCM HTTP v1 `message` without its `token` and `android.ttl` (what counts towards
    /// FCM's limit is the notification and data).
    public static func fcmMessage(_ content: MessageContent) -> FCMMessage {
        FCMMessage(
            token: nil, notification: .init(title: content.title, body: content.body), data: AppData(content),
            android: .init(priority: "high", ttl: nil, collapseKey: content.deliveryId))
    }

    /// The size the provider limits, in bytes: APNs the whole body, FCM the message as
    /// `fcmMessage` builds it.
    public static func size(of content: MessageContent, for provider: SendProvider) -> Int {
        switch provider {
        case .apns: apns(content).count
        case .fcm: encode(fcmMessage(content)).count
        case .email: 0
        }
    }

    /// The limit of `provider`, if it has one the sender checks.
    public static func limit(of provider: SendProvider) -> Int? {
        switch provider {
        case .apns: apnsLimit
        case .fcm: fcmLimit
        case .email: nil
        }
    }

    /// Why `content` cannot go through `provider`, or nil when it can.
    public static func refusal(of content: MessageContent, for provider: SendProvider) -> String? {
        guard let limit = limit(of: provider) else { return nil }
        let size = size(of: content, for: provider)
        guard size > limit else { return nil }
        return "payload of \(size) bytes is over the \(provider.rawValue) limit of \(limit) bytes"
    }

    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        do {
            return try CanonicalJSONEncoder.encode(value)
        } catch {
            preconditionFailure("encoding a provider payload failed: \(error)")
        }
    }
}

/// The app's own fields, the same on both platforms (seed 002: `type`, `deep_link`).
public struct AppData: Codable, Hashable, Sendable {
    public var type: String
    public var deepLink: String
    public var deliveryId: String
    enum CodingKeys: String, CodingKey { case type, deepLink = "deep_link", deliveryId = "delivery_id" }

    public init(_ content: MessageContent) {
        type = content.notification; deepLink = content.deepLink; deliveryId = content.deliveryId
    }
}

struct APNsBody: Encodable {
    struct APS: Encodable {
        struct Alert: Encodable { var title: String; var body: String }
        var alert: Alert
        var sound: String
    }
    var aps: APS
    var data: AppData
}

/// An FCM HTTP v1 `message` (projects.messages.send).
public struct FCMMessage: Codable, Hashable, Sendable {
    public struct Notification: Codable, Hashable, Sendable { public var title: String; public var body: String }
    public struct Android: Codable, Hashable, Sendable {
        public var priority: String
        /// Seconds with an `s` suffix, e.g. `"3600s"`.
        public var ttl: String?
        public var collapseKey: String?
        enum CodingKeys: String, CodingKey { case priority, ttl, collapseKey = "collapse_key" }
    }
    public var token: String?
    public var notification: Notification
    public var data: AppData
    public var android: Android
}
