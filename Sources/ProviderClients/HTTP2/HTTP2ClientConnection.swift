import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One TLS + HTTP/2 connection that many callers use at once.
///
/// A caller's call joins the connection's queue; the first call into an empty queue asks the
/// event loop to take the whole queue, so a burst of calls costs one hop to the event loop
/// and one flush, not one each (`HTTP2CallsHandler.start`).
final class HTTP2ClientConnection: Sendable {
    let channel: any Channel
    let gauges: HTTP2ConnectionGauges
    private let handler: NIOLoopBound<HTTP2CallsHandler>
    private let queue = Mutex<[HTTP2CallsHandler.Call]>([])

    private init(channel: any Channel, gauges: HTTP2ConnectionGauges, handler: NIOLoopBound<HTTP2CallsHandler>) {
        self.channel = channel; self.gauges = gauges; self.handler = handler
    }

    /// Calls in flight on this connection.
    var load: Int { gauges.load.load(ordering: .relaxed) }
    var maximumStreams: Int { gauges.maximumStreams.load(ordering: .relaxed) }
    var takesCalls: Bool { gauges.takesCalls.load(ordering: .relaxed) }

    /// Sends `request` and waits for its answer (or its deadline).
    func execute(_ request: HTTP2Request) async throws -> HTTP2Response {
        gauges.load.add(1, ordering: .relaxed)
        return try await withCheckedThrowingContinuation { continuation in
            let first = queue.withLock { calls in
                calls.append(HTTP2CallsHandler.Call(request: request, continuation: continuation))
                return calls.count == 1
            }
            guard first else { return }
            channel.eventLoop.execute { [self] in
                let calls = queue.withLock { calls in
                    defer { calls.removeAll(keepingCapacity: true) }
                    return calls
                }
                handler.value.start(calls)
            }
        }
    }

    /// Opens a connection to `host`:`port` on `eventLoop`: TLS verified against `tls`'s trust
    /// roots for `serverName` (nil for an IP address, which is verified as such), ALPN `h2`.
    static func connect(
        host: String, port: Int, serverName: String?, tls: NIOSSLContext, on eventLoop: any EventLoop, connectTimeout: TimeAmount
    ) -> EventLoopFuture<HTTP2ClientConnection> {
        let gauges = HTTP2ConnectionGauges()
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let settings: HTTP2Settings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                        HTTP2Setting(parameter: .enablePush, value: 0),
                    ]
                    try channel.pipeline.syncOperations.addHandlers([
                        try NIOSSLClientHandler(context: tls, serverHostname: serverName),
                        NIOHTTP2Handler(mode: .client, initialSettings: settings),
                        HTTP2CallsHandler(gauges: gauges),
                    ])
                }
            }
            .connect(host: host, port: port)
            .flatMapThrowing { channel in
                let handler = try channel.pipeline.syncOperations.handler(type: HTTP2CallsHandler.self)
                return HTTP2ClientConnection(channel: channel, gauges: gauges, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
            }
    }
}
