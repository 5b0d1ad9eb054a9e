public import FleetWorkers
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import Prometheus
public import ServiceLifecycle

/// The worker's HTTP port: `/healthz` (liveness), `/readyz` (readiness: every assigned
/// partition restored, no topic stopped) and `/metrics` (Prometheus text format).
///
/// A plain NIO HTTP/1.1 server rather than a web framework: three fixed routes do not pay for
/// a framework's build time. Requests are answered by a channel handler on the event loop
/// rather than through `NIOAsyncChannel`, whose accept stream traps when its task is cancelled
/// with accepted connections still buffered (swift-nio #2637, #2813); the routes are
/// synchronous anyway. So the health and readiness closures run on a NIO event loop for every
/// probe: they must be cheap and must not block (read an atomic or a `Mutex`).
///
/// Run it in the worker's `ServiceGroup`. Graceful shutdown or cancellation closes the listening
/// socket and then every open connection, so an idle keep-alive connection from a scraper cannot
/// outlive the server; `run()` then returns.
public final class ProbeServer: Service {
    /// Keep-alive connections silent this long are closed: longer than any sane scrape interval,
    /// short enough that abandoned or trickling clients do not pile up file descriptors.
    static let idleTimeout = TimeAmount.seconds(120)

    private let host: String
    private let port: Int
    private let routes: ProbeRoutes
    private let logger: Logger
    private let boundPortValue = BoundPort()

    /// - Parameters:
    ///   - host: Address to bind, e.g. `0.0.0.0` in a pod, `127.0.0.1` in tests.
    ///   - port: Port to bind; 0 picks a free one (see `boundPort()`).
    ///   - registry: Whose metrics `/metrics` exposes (the one `WorkerMetrics` records into).
    ///   - health: What `/healthz` answers.
    ///   - readiness: What `/readyz` answers.
    public init(
        host: String,
        port: Int,
        registry: PrometheusCollectorRegistry,
        health: @escaping @Sendable () -> HealthStatus,
        readiness: @escaping @Sendable () -> Readiness,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.routes = ProbeRoutes(registry: registry, health: health, readiness: readiness)
        self.logger = logger
    }

    /// The port the server listens on, once it is bound: waits for `run()` to bind; throws the
    /// bind error if binding failed. Never returns if `run()` is never called.
    public func boundPort() async throws -> Int {
        try await boundPortValue.value()
    }

    public func run() async throws {
        let connections = OpenConnections()
        let routes = self.routes
        let server: any Channel
        do {
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // TCP level: `.socketOption(.tcp_nodelay)` would set SOL_SOCKET option 1 (SO_DEBUG),
                // which only root may set; every connection of a non-root worker was then closed.
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        connections.insert(channel)
                        // Error handling answers an unparseable request with 400, then closes.
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: Self.idleTimeout))
                        try channel.pipeline.syncOperations.addHandler(ProbeRequestHandler(routes: routes))
                    }
                }
                .bind(host: host, port: port)
                .get()
        } catch {
            logger.error("probe server cannot bind", metadata: ["host": "\(host)", "port": "\(port)", "error": "\(error)"])
            boundPortValue.resolve(.failure(error))
            throw error
        }
        let actualPort = server.localAddress?.port ?? port
        boundPortValue.resolve(.success(actualPort))
        logger.info("probe server listening", metadata: ["host": "\(host)", "port": "\(actualPort)"])

        await withTaskCancellationOrGracefulShutdownHandler {
            // `closeFuture` never fails; it completes once the listener is closed, by us or not.
            try? await server.closeFuture.get()
        } onCancelOrGracefulShutdown: {
            server.close(promise: nil)
        }
        connections.closeAll()
        logger.info("probe server stopped", metadata: ["port": "\(actualPort)"])
    }
}

/// Answers each complete request on one connection, in order (the pipeline's HTTP/1.1
/// pipelining assistance holds later requests back until a response is done).
private final class ProbeRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: ProbeRoutes
    private var request: HTTPRequestHead?

    init(routes: ProbeRoutes) {
        self.routes = routes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break  // no route takes a body; it is read and dropped so the framing holds
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, with: routes.response(method: head.method, target: head.uri), context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Parse errors were answered with 400 upstream; a reset is the client's business.
        context.close(promise: nil)
    }

    private func respond(to request: HTTPRequestHead, with response: ProbeResponse, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: String(response.body.count))
        for (name, value) in response.extraHeaders { headers.add(name: name, value: value) }
        let keepAlive = request.isKeepAlive
        if !keepAlive {
            headers.add(name: "Connection", value: "close")
        } else if request.version == .http1_0 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        let head = HTTPResponseHead(version: request.version, status: response.status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        // HEAD gets GET's headers, Content-Length included, and no body (RFC 9110 §9.3.2).
        if request.method != .HEAD, !response.body.isEmpty {
            let body = context.channel.allocator.buffer(bytes: response.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }
}

@available(*, unavailable)
extension ProbeRequestHandler: Sendable {}
