import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Connections to one HTTPS origin that speaks HTTP/2, shared by every caller.
///
/// A call goes to the least loaded connection that takes calls and has a stream free under its
/// server's SETTINGS_MAX_CONCURRENT_STREAMS. When every connection is full, another is opened
/// (up to `maximumConnections`, each on the next event loop) and, while it opens, the call
/// waits in the least loaded one's stream queue (`NIOHTTP2Handler` starts it when a stream
/// closes). A connection the server sends GOAWAY on, or that closes, takes no more calls and
/// is replaced on the next call that needs one.
final class HTTP2ConnectionPool: Sendable {
    /// `https://host[:port]` with no path: what a pool connects to.
    struct Origin: Sendable, Equatable {
        var host: String
        var port: Int
        /// `:authority` of every request.
        var authority: String

        /// Reads `url`; nil unless it is an `https` URL with a host and no path, query or user.
        init?(url: String) {
            guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
                let host = components.host, !host.isEmpty, components.path.isEmpty || components.path == "/",
                components.query == nil, components.user == nil
            else { return nil }
            self.host = host
            port = components.port ?? 443
            authority = components.port.map { "\(host):\($0)" } ?? host
        }
    }

    private struct State {
        var connections: [HTTP2ClientConnection] = []
        var opening: EventLoopFuture<HTTP2ClientConnection>?
        var shutDown = false
    }

    let origin: Origin
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private let maximumConnections: Int
    private let connectTimeout: TimeAmount
    private let state = Mutex(State())

    /// - Parameters:
    ///   - extraTrustRoots: PEM certificates trusted besides the system's.
    ///   - maximumConnections: at most this many connections at once (Apple: "keep your
    ///     connections with APNs open across multiple notifications"; a few suffice, each
    ///     carrying as many streams as the server allows).
    init(
        origin: Origin, extraTrustRoots: [NIOSSLCertificate], maximumConnections: Int = 4, connectTimeout: TimeAmount = .seconds(5),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.applicationProtocols = ["h2"]
        if !extraTrustRoots.isEmpty { configuration.additionalTrustRoots = [.certificates(extraTrustRoots)] }
        tls = try NIOSSLContext(configuration: configuration)
        self.origin = origin
        self.group = group
        self.maximumConnections = max(1, maximumConnections)
        self.connectTimeout = connectTimeout
    }

    /// Sends `request` on a pooled connection and returns the answer; throws
    /// `HTTP2CallError` (or the connection's own error) when there is none.
    func execute(_ request: HTTP2Request) async throws -> HTTP2Response {
        try await connection().execute(request)
    }

    /// Closes every connection; calls in flight fail with `connectionClosed`.
    func shutdown() async {
        let (connections, opening) = state.withLock { state in
            state.shutDown = true
            defer { state.connections = [] }
            return (state.connections, state.opening)
        }
        if let opened = try? await opening?.get() { try? await opened.channel.close() }
        for connection in connections { try? await connection.channel.close() }
    }

    private enum Choice {
        case use(HTTP2ClientConnection)
        case wait(EventLoopFuture<HTTP2ClientConnection>)
    }

    private func connection() async throws -> HTTP2ClientConnection {
        var open: EventLoopPromise<HTTP2ClientConnection>?
        let choice: Choice = try state.withLock { state in
            guard !state.shutDown else { throw HTTP2CallError.shutDown }
            state.connections.removeAll { !$0.takesCalls }
            var best: HTTP2ClientConnection?
            var bestLoad = Int.max
            for connection in state.connections {
                let load = connection.load
                if load < bestLoad { best = connection; bestLoad = load }
            }
            if let best, bestLoad < best.maximumStreams { return .use(best) }
            if state.opening == nil, state.connections.count < maximumConnections {
                let promise = group.next().makePromise(of: HTTP2ClientConnection.self)
                state.opening = promise.futureResult
                open = promise
            }
            if let best { return .use(best) }
            guard let opening = state.opening else { throw HTTP2CallError.connectionClosed }
            return .wait(opening)
        }
        if let open { startOpening(open) }
        switch choice {
        case .use(let connection): return connection
        case .wait(let opening): return try await opening.get()
        }
    }

    /// Opens a connection into `promise` and, once open, adds it to the pool.
    private func startOpening(_ promise: EventLoopPromise<HTTP2ClientConnection>) {
        let serverName = (try? SocketAddress(ipAddress: origin.host, port: 0)) == nil ? origin.host : nil
        HTTP2ClientConnection.connect(
            host: origin.host, port: origin.port, serverName: serverName, tls: tls, on: promise.futureResult.eventLoop,
            connectTimeout: connectTimeout
        ).whenComplete { [self] result in
            let shutDown = state.withLock { state in
                state.opening = nil
                if case .success(let connection) = result, !state.shutDown { state.connections.append(connection) }
                return state.shutDown
            }
            if shutDown, case .success(let connection) = result { connection.channel.close(promise: nil) }
            promise.completeWith(result)
        }
    }
}
