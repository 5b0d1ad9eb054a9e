@testable import FleetWorkers
@testable import FleetService
import Logging
import Prometheus
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// DESIGN.md "Runtime": the HTTP port with /healthz, /readyz and /metrics, checked over real
/// sockets with a client that shares no code with the server.
@Suite("Probe server: /healthz, /readyz, /metrics over HTTP/1.1", .timeLimit(.minutes(1)))
struct ProbeServerTests {
    @Test("/healthz answers 200 ok while alive")
    func healthzAlive() async throws {
        try await withProbeServer { port in
            let response = try get("/healthz", port: port)
            #expect(response.status == 200)
            #expect(response.body == "ok\n")
            #expect(response.headers["content-type"]?.hasPrefix("text/plain") == true)
        }
    }

    @Test("/healthz answers 503 with the failure message, on one line")
    func healthzFailed() async throws {
        try await withProbeServer(health: { .failed("consume loop stopped:\nproducer fenced") }) { port in
            let response = try get("/healthz", port: port)
            #expect(response.status == 503)
            #expect(response.body == "consume loop stopped: producer fenced\n")
        }
    }

    @Test("a readiness reason is one line, whatever text it is given")
    func reasonIsOneLine() {
        #expect(Readiness.Reason("restoring\nrin.delivery.inbox[3]\r\n").description == "restoring rin.delivery.inbox[3]")
        #expect(Readiness.notReady(.restoring(topic: "t", partition: 0)).isReady == false)
        #expect(Readiness(reasons: []) == .ready)
    }

    @Test("/readyz answers 503 with one line per reason, then 200 once ready")
    func readinessFlips() async throws {
        let readiness = Switch(
            Readiness.notReady(
                .restoring(topic: "rin.delivery.inbox", partition: 3),
                .partitionCountChanged(topic: "rin.app.activity", from: 8, to: 12)))
        try await withProbeServer(readiness: { readiness.value }) { port in
            let connection = try RawHTTPConnection(port: port)
            try connection.send("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n")
            let waiting = try connection.readResponse()
            #expect(waiting.status == 503)
            #expect(waiting.body == "restoring rin.delivery.inbox[3]\ntopic rin.app.activity: partition count changed 8 → 12\n")

            readiness.value = .ready
            try connection.send("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n")
            let ready = try connection.readResponse()
            #expect(ready.status == 200)
            #expect(ready.body == "ready\n")

            // The partitions a member folds follow "ready" (and the reasons while not ready),
            // as the runtime's health snapshot reports them.
            let health = RuntimeHealth()
            health.update(notReady: [], folding: "folds rin.delivery.inbox partitions [0,1] (2 of 4)")
            readiness.value = health.readiness
            try connection.send("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n")
            let folding = try connection.readResponse()
            #expect(folding.status == 200)
            #expect(folding.body == "ready\nfolds rin.delivery.inbox partitions [0,1] (2 of 4)\n")
            health.update(notReady: ["restoring rin.delivery.inbox[1]"], folding: "folds rin.delivery.inbox partitions [0,1] (2 of 4)")
            readiness.value = health.readiness
            try connection.send("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n")
            let restoring = try connection.readResponse()
            #expect(restoring.status == 503)
            #expect(restoring.body == "restoring rin.delivery.inbox[1]\nfolds rin.delivery.inbox partitions [0,1] (2 of 4)\n")
        }
    }

    @Test("/metrics serves the registry in Prometheus text format, with what WorkerMetrics recorded")
    func metricsExposition() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = WorkerMetrics(worker: "delivery-worker", registry: registry)
        try await withProbeServer(registry: registry) { port in
            metrics.recordIn(topic: "rin.delivery.inbox", count: 3)
            metrics.decision(outcome: .suppressed, reason: "quiet_hours", rule: "P-QUIET-1")
            let response = try get("/metrics", port: port)
            #expect(response.status == 200)
            #expect(response.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            let lines = Set(response.body.split(separator: "\n").map(String.init))
            #expect(lines.contains("# TYPE fleet_records_in_total counter"))
            #expect(lines.contains(#"fleet_records_in_total{worker="delivery-worker",topic="rin.delivery.inbox"} 3"#))
            #expect(lines.contains(
                #"fleet_decisions_total{worker="delivery-worker",outcome="suppressed",reason="quiet_hours",rule="P-QUIET-1"} 1"#))

            // A later scrape sees later increments.
            metrics.recordIn(topic: "rin.delivery.inbox", count: 2)
            let again = try get("/metrics", port: port)
            #expect(again.body.contains(#"fleet_records_in_total{worker="delivery-worker",topic="rin.delivery.inbox"} 5"#))
        }
    }

    @Test("unknown paths are 404, other methods on a probe are 405, a query string is ignored")
    func routing() async throws {
        try await withProbeServer { port in
            #expect(try get("/", port: port).status == 404)
            #expect(try get("/healthz/extra", port: port).status == 404)
            #expect(try get("/healthz?verbose=1", port: port).status == 200)
            let connection = try RawHTTPConnection(port: port)
            try connection.send("POST /healthz HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello")
            let refused = try connection.readResponse()
            #expect(refused.status == 405)
            #expect(refused.headers["allow"] == "GET, HEAD")
            // The request body was consumed, so the connection still frames the next request.
            try connection.send("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try connection.readResponse().body == "ok\n")
        }
    }

    @Test("HEAD gets GET's headers and no body; the connection stays usable")
    func head() async throws {
        try await withProbeServer { port in
            let connection = try RawHTTPConnection(port: port)
            try connection.send("HEAD /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            let response = try connection.readResponse(toHead: true)
            #expect(response.status == 200)
            #expect(response.headers["content-length"] == "3")
            // Had a body been sent, it would be read here as the start of the next response.
            try connection.send("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n")
            let next = try connection.readResponse()
            #expect(next.status == 200)
            #expect(next.body == "ready\n")
        }
    }

    @Test("keep-alive serves several requests on one connection; Connection: close closes it")
    func keepAlive() async throws {
        try await withProbeServer { port in
            let connection = try RawHTTPConnection(port: port)
            // Pipelined: both requests in one write, answered in order.
            try connection.send(
                "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\nGET /nope HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try connection.readResponse().status == 200)
            #expect(try connection.readResponse().status == 404)
            try connection.send("GET /healthz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            let last = try connection.readResponse()
            #expect(last.status == 200)
            #expect(last.headers["connection"] == "close")
            #expect(try connection.isClosedByPeer())
        }
    }

    @Test("a malformed request gets 400 and a closed connection; the server keeps serving")
    func malformedRequest() async throws {
        try await withProbeServer { port in
            for garbage in ["NOT HTTP AT ALL\r\n\r\n", "GET /healthz HTTP/1.1\r\nBad Header Without Colon\r\n\r\n"] {
                let connection = try RawHTTPConnection(port: port)
                try connection.send(garbage)
                let response = try connection.readResponse()
                #expect(response.status == 400)
                #expect(try connection.isClosedByPeer())
            }
            #expect(try get("/healthz", port: port).status == 200)
        }
    }

    @Test("graceful shutdown closes the listener and idle keep-alive connections, and run() returns")
    func gracefulShutdown() async throws {
        let server = makeServer()
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let port = try await server.boundPort()
                let idle = try RawHTTPConnection(port: port)
                try idle.send("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
                #expect(try idle.readResponse().status == 200)

                trigger.triggerGracefulShutdown()
                try await group.next()  // run() returned, and without an error

                #expect(try idle.isClosedByPeer())
                #expect(throws: RawHTTPConnection.Failure.self) { try RawHTTPConnection(port: port) }
            }
        }
    }

    @Test("a port already in use fails run() and boundPort() with the bind error")
    func bindFailure() async throws {
        try await withProbeServer { port in
            let second = makeServer(port: port)
            await #expect(throws: (any Error).self) { try await second.run() }
            await #expect(throws: (any Error).self) { try await second.boundPort() }
        }
    }
}

// MARK: - Helpers

/// A value the test flips while the server reads it from its event loop.
private final class Switch<Value: Sendable>: Sendable {
    private let state: Mutex<Value>
    init(_ value: Value) { state = Mutex(value) }
    var value: Value {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

private func makeServer(
    port: Int = 0,
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    health: @escaping @Sendable () -> HealthStatus = { .alive },
    readiness: @escaping @Sendable () -> Readiness = { .ready }
) -> ProbeServer {
    ProbeServer(
        host: "127.0.0.1", port: port, registry: registry, health: health, readiness: readiness,
        logger: Logger(label: "probe-server-test", factory: { _ in SwiftLogNoOpLogHandler() }))
}

/// Runs `body` with a server on a free port, then cancels the server.
private func withProbeServer(
    registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
    health: @escaping @Sendable () -> HealthStatus = { .alive },
    readiness: @escaping @Sendable () -> Readiness = { .ready },
    _ body: (Int) async throws -> Void
) async throws {
    let server = makeServer(registry: registry, health: health, readiness: readiness)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await server.run() }
        try await body(try await server.boundPort())
        group.cancelAll()
        _ = await group.nextResult()  // cancelled: returning or throwing CancellationError are both fine
    }
}

private func get(_ path: String, port: Int) throws -> RawHTTPConnection.Response {
    let connection = try RawHTTPConnection(port: port)
    try connection.send("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n")
    return try connection.readResponse()
}
