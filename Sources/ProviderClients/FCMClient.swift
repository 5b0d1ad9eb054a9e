import AsyncHTTPClient
import FleetModel
import Foundation
import NIOHTTP1
import SenderCore

/// FCM HTTP v1 (`POST /v1/projects/<project>/messages:send`) with an OAuth2 access token.
///
/// FCM has no idempotency key: the message `name` is FCM's, given in its answer (the receipt's
/// `provider_id`). The delivery id is the message's `android.collapse_key` (FCM keeps only the
/// newest of a key for a device that is offline) and its data's `delivery_id`, by which the app
/// can drop a copy sent again.
struct FCMClient {
    let settings: ProviderSettings.FCM
    let client: HTTPClient
    let tokens: FCMAccessToken
    let timeout: TimeInterval

    private struct Request: Encodable { var message: FCMMessage }
    private struct Accepted: Decodable { var name: String }
    private struct ErrorBody: Decodable {
        struct Detail: Decodable {
            var type: String?
            var errorCode: String?
            enum CodingKeys: String, CodingKey { case type = "@type", errorCode }
        }
        struct Inner: Decodable { var status: String?; var message: String?; var details: [Detail]? }
        var error: Inner
    }

    func send(_ attempt: SendAttempt, now: Date) async throws -> SendResult {
        var message = ProviderPayloads.fcmMessage(MessageContent(attempt))
        message.token = attempt.token
        let ttl = max(0, Int(Double(attempt.expiresAt.millisecondsSinceEpoch) / 1000 - now.timeIntervalSince1970))
        message.android.ttl = "\(ttl)s"
        var headers = HTTPHeaders()
        do {
            headers.add(name: "authorization", value: "Bearer " + (try await tokens.token(renew: attempt.refreshCredentials)))
        } catch let failure as FCMAccessToken.Failure {
            // The token endpoint refused the assertion: the service account is wrong or revoked.
            return result(attempt, outcome: failure.status.map { $0 >= 500 || $0 == 429 } == true ? .retryable : .rejected,
                status: failure.status, reason: "oauth2: \(failure.description)")
        }
        headers.add(name: "content-type", value: "application/json")
        let project = attempt.app.isEmpty ? settings.serviceAccount.projectId : attempt.app
        let url = settings.endpoint + "/v1/projects/\(project)/messages:send"
        let reply = try await client.post(url, headers: headers, body: ProviderPayloads.encode(Request(message: message)), timeout: timeout)
        if reply.status == 200 {
            let name = (try? JSONDecoder().decode(Accepted.self, from: reply.body))?.name
            return result(attempt, outcome: .accepted, status: 200, providerId: name)
        }
        let error = (try? JSONDecoder().decode(ErrorBody.self, from: reply.body))?.error
        let code = error?.details?.first { $0.type?.hasSuffix("FcmError") == true }?.errorCode
        return result(
            attempt, outcome: ProviderAnswers.fcm(status: reply.status, errorStatus: error?.status, errorCode: code),
            status: reply.status, reason: code ?? error?.status ?? "status \(reply.status)",
            retryAfterMs: ProviderAnswers.retryAfterMilliseconds(reply.headers.first(name: "retry-after")))
    }

    private func result(
        _ attempt: SendAttempt, outcome: SendOutcome, status: Int?, reason: String? = nil, providerId: String? = nil,
        retryAfterMs: Int64? = nil
    ) -> SendResult {
        SendResult(
            userId: attempt.userId, attemptId: attempt.id, deliveryId: attempt.deliveryId, deviceId: attempt.deviceId,
            provider: .fcm, outcome: outcome, status: status, reason: reason, providerId: providerId, retryAfterMs: retryAfterMs)
    }
}
