import AsyncHTTPClient
import FleetModel
import Foundation
import NIOHTTP1
import SenderCore

/// APNs over HTTP/2 with token-based authentication
/// (`POST /3/device/<token>`, Apple's "Sending notification requests to APNs").
struct APNsClient {
    let settings: ProviderSettings.APNs
    let client: HTTPClient
    let tokens: APNsProviderToken
    let timeout: TimeInterval

    private struct ErrorBody: Decodable { var reason: String? }

    func send(_ attempt: SendAttempt) async throws -> SendResult {
        let apnsId = AttemptIdentity.uuid(for: attempt.id)
        var headers = HTTPHeaders()
        headers.add(name: "authorization", value: "bearer " + (try await tokens.token(renew: attempt.refreshCredentials)))
        headers.add(name: "apns-topic", value: attempt.app)
        headers.add(name: "apns-push-type", value: "alert")
        // 10 = immediately; security notifications and reminders are what the user is waiting for.
        headers.add(name: "apns-priority", value: "10")
        headers.add(name: "apns-expiration", value: String(attempt.expiresAt.secondsSinceEpoch))
        headers.add(name: "apns-collapse-id", value: AttemptIdentity.collapseId(for: attempt.deliveryId))
        headers.add(name: "apns-id", value: apnsId)
        headers.add(name: "content-type", value: "application/json")
        let url = settings.endpoint + "/3/device/" + attempt.token
        let reply = try await client.post(url, headers: headers, body: ProviderPayloads.apns(MessageContent(attempt)), timeout: timeout)
        let reason = reply.status == 200 ? nil : (try? JSONDecoder().decode(ErrorBody.self, from: reply.body))?.reason
        return SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: .apns, outcome: ProviderAnswers.apns(status: reply.status, reason: reason), status: reply.status,
            reason: reason, providerId: reply.status == 200 ? (reply.headers.first(name: "apns-id") ?? apnsId) : nil,
            retryAfterMs: ProviderAnswers.retryAfterMilliseconds(reply.headers.first(name: "retry-after")))
    }
}
