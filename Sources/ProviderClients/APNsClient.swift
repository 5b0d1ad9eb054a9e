import FleetModel
import Foundation
import NIOCore
import NIOHPACK
import SenderCore

/// APNs over HTTP/2 with token-based authentication (`POST /3/device/<token>`, Apple's
/// "Sending notification requests to APNs"), on the sender's own HTTP/2 connection pool
/// (`HTTP2ConnectionPool`): many calls share each connection as concurrent streams, and the
/// calls made while an event loop is busy go out in one write.
struct APNsClient {
    let pool: HTTP2ConnectionPool
    let tokens: APNsProviderToken
    let timeout: TimeAmount

    private struct ErrorBody: Decodable { var reason: String? }

    func send(_ attempt: SendAttempt) async throws -> SendResult {
        let apnsId = AttemptIdentity.uuid(for: attempt.id)
        let bearer: String
        if !attempt.refreshCredentials, let cached = tokens.cachedToken() {
            bearer = cached
        } else {
            bearer = try await tokens.token(renew: attempt.refreshCredentials)
        }
        let body = ByteBuffer(bytes: ProviderPayloads.apns(MessageContent(attempt)))
        var headers = HPACKHeaders()
        headers.reserveCapacity(13)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: pool.origin.authority)
        // Values that differ on every call are kept out of HPACK's table (they would only
        // push out the ones that repeat: the bearer token, the topic, the priority).
        headers.add(name: ":path", value: "/3/device/" + attempt.token, indexing: .nonIndexable)
        headers.add(name: "authorization", value: "bearer " + bearer)
        headers.add(name: "apns-topic", value: attempt.app)
        headers.add(name: "apns-push-type", value: "alert")
        // 10 = immediately; security notifications and reminders are what the user is waiting for.
        headers.add(name: "apns-priority", value: "10")
        headers.add(name: "apns-expiration", value: String(attempt.expiresAt.secondsSinceEpoch), indexing: .nonIndexable)
        headers.add(name: "apns-collapse-id", value: AttemptIdentity.collapseId(for: attempt.deliveryId), indexing: .nonIndexable)
        headers.add(name: "apns-id", value: apnsId, indexing: .nonIndexable)
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "content-length", value: String(body.readableBytes), indexing: .nonIndexable)
        let reply = try await pool.execute(HTTP2Request(headers: headers, body: body, deadline: .now() + timeout))
        let reason = reply.status == 200 ? nil : (try? JSONDecoder().decode(ErrorBody.self, from: Data(reply.body.readableBytesView)))?.reason
        return SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: .apns, outcome: ProviderAnswers.apns(status: reply.status, reason: reason), status: reply.status,
            reason: reason, providerId: reply.status == 200 ? (reply.headers.first(name: "apns-id") ?? apnsId) : nil,
            retryAfterMs: ProviderAnswers.retryAfterMilliseconds(reply.headers.first(name: "retry-after")))
    }
}
