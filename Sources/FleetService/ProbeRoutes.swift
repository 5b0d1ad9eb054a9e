import FleetWorkers
import NIOHTTP1
import Prometheus

/// One HTTP response of the probe port, before it is framed on a connection.
struct ProbeResponse: Sendable {
    var status: HTTPResponseStatus
    var contentType: String
    var body: [UInt8]
    var extraHeaders: [(String, String)] = []

    static let plainText = "text/plain; charset=utf-8"
    /// The Prometheus text exposition format, as scrapers ask for it.
    static let prometheusText = "text/plain; version=0.0.4; charset=utf-8"

    static func text(_ status: HTTPResponseStatus, _ text: String) -> ProbeResponse {
        ProbeResponse(status: status, contentType: plainText, body: Array(text.utf8))
    }
}

/// What the probe port answers to which request: a pure function of the method, the target
/// and the worker's current health, readiness and metrics, kept apart from the socket code.
struct ProbeRoutes: Sendable {
    let registry: PrometheusCollectorRegistry
    let health: @Sendable () -> HealthStatus
    let readiness: @Sendable () -> Readiness

    func response(method: HTTPMethod, target: String) -> ProbeResponse {
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let answer: () -> ProbeResponse
        switch path {
        case "/healthz": answer = healthz
        case "/readyz": answer = readyz
        case "/metrics": answer = metrics
        default: return .text(.notFound, "not found\n")
        }
        guard method == .GET || method == .HEAD else {
            var refusal = ProbeResponse.text(.methodNotAllowed, "method not allowed\n")
            refusal.extraHeaders = [("Allow", "GET, HEAD")]
            return refusal
        }
        return answer()
    }

    private func healthz() -> ProbeResponse {
        switch health() {
        case .alive:
            return .text(.ok, "ok\n")
        case .failed(let message):
            let line = message.split(whereSeparator: \.isNewline).joined(separator: " ")
            return .text(.serviceUnavailable, (line.isEmpty ? "failed" : line) + "\n")
        }
    }

    private func readyz() -> ProbeResponse {
        let state = readiness()
        let details = state.details.map { "\($0)\n" }.joined()
        guard !state.isReady else { return .text(.ok, "ready\n" + details) }
        return .text(.serviceUnavailable, state.reasons.map { "\($0)\n" }.joined() + details)
    }

    private func metrics() -> ProbeResponse {
        ProbeResponse(status: .ok, contentType: ProbeResponse.prometheusText, body: registry.emitToBuffer())
    }
}
