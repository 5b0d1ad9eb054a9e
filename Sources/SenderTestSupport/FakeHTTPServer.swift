public import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One request a stand-in provider received.
public struct FakeRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [String: String]
    public var body: Data

    /// `headers` by their lower-case names.
    public init(method: String, path: String, headers: [String: String], body: Data) {
        self.method = method; self.path = path; self.headers = headers; self.body = body
    }

    /// A header by its lower-case name.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// What a stand-in provider answers; `delay` holds the answer back (a slow provider).
public struct FakeResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data
    public var delay: TimeInterval

    public init(status: Int, headers: [String: String] = [:], body: Data = Data(), delay: TimeInterval = 0) {
        self.status = status; self.headers = headers; self.body = body; self.delay = delay
    }

    public static func json(_ status: Int, _ object: [String: Any], headers: [String: String] = [:], delay: TimeInterval = 0) -> FakeResponse {
        let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return FakeResponse(status: status, headers: headers.merging(["content-type": "application/json"]) { a, _ in a }, body: body, delay: delay)
    }
}

/// An HTTPS server (on 127.0.0.1 unless told otherwise) that speaks HTTP/2 only (ALPN `h2`, as
/// APNs), serving every request with `respond`. The TLS and HTTP/2 are swift-nio-ssl's and
/// swift-nio-http2's.
public final class FakeHTTPServer: Sendable {
    public let port: Int
    /// The name clients reach it by, one the certificate is valid for.
    public let publicHost: String
    private let channel: any Channel
    private let connections: OpenConnections

    private init(port: Int, publicHost: String, channel: any Channel, connections: OpenConnections) {
        self.port = port; self.publicHost = publicHost; self.channel = channel; self.connections = connections
    }

    /// Connections accepted since the start.
    public var connectionsAccepted: Int { connections.accepted }

    /// Sends GOAWAY on every open connection, taking the streams already opened and no more,
    /// as APNs does before it closes a connection (RFC 9113 6.8).
    public func goAway() async throws {
        for connection in connections.open {
            try await connection.writeAndFlush(HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil)))
        }
    }

    /// Closes every open connection at once, answers in flight included (a lost connection).
    public func dropConnections() async {
        for connection in connections.open { try? await connection.close() }
    }

    public var baseURL: String { "https://\(publicHost):\(port)" }

    /// - Parameters:
    ///   - host: the address to listen on (`0.0.0.0` in a container).
    ///   - port: the port, 0 for any free one (`port` tells which).
    ///   - publicHost: the name in `baseURL`, one of the names `authority` signed for.
    ///   - maximumConcurrentStreams: the SETTINGS_MAX_CONCURRENT_STREAMS it announces (a stream
    ///     beyond it is refused).
    public static func start(
        authority: TestCertificateAuthority, host: String = "127.0.0.1", port: Int = 0, publicHost: String = "localhost",
        maximumConcurrentStreams: Int = 100, respond: @escaping @Sendable (FakeRequest) async -> FakeResponse
    ) async throws -> FakeHTTPServer {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(authority.serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(authority.serverKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let connection = {
            var configuration = NIOHTTP2Handler.ConnectionConfiguration()
            configuration.initialSettings = nioDefaultSettings.filter { $0.parameter != .maxConcurrentStreams }
                + [HTTP2Setting(parameter: .maxConcurrentStreams, value: maximumConcurrentStreams)]
            return configuration
        }()
        let connections = OpenConnections()
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                connections.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandlers([
                                HTTP2FramePayloadToHTTP1ServerCodec(), FakeRequestHandler(respond: respond),
                            ])
                        }
                    }
                }
            }
            .bind(host: host, port: port).get()
        guard let port = channel.localAddress?.port else { throw ChannelError.unknownLocalAddress }
        return FakeHTTPServer(port: port, publicHost: publicHost, channel: channel, connections: connections)
    }

    public func stop() async throws { try await channel.close() }
}

/// The server's accepted connections that are still open.
private final class OpenConnections: Sendable {
    private let state = Mutex<(accepted: Int, open: [ObjectIdentifier: any Channel])>((0, [:]))

    var accepted: Int { state.withLock { $0.accepted } }
    var open: [any Channel] { state.withLock { Array($0.open.values) } }

    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { state in
            state.accepted += 1
            state.open[id] = channel
        }
        channel.closeFuture.whenComplete { _ in _ = self.state.withLock { $0.open.removeValue(forKey: id) } }
    }
}

/// Collects one request on an HTTP/2 stream and writes the scripted answer.
final class FakeRequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let respond: @Sendable (FakeRequest) async -> FakeResponse
    private var request: FakeRequest?

    init(respond: @escaping @Sendable (FakeRequest) async -> FakeResponse) { self.respond = respond }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            var headers: [String: String] = [:]
            for (name, value) in head.headers { headers[name.lowercased()] = value }
            request = FakeRequest(method: head.method.rawValue, path: head.uri, headers: headers, body: Data())
        case .body(let buffer):
            request?.body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let request else { return }
            self.request = nil
            // Answered from a task of its own (a provider's checks, jwt-kit's among them, are
            // async), written back on the stream's event loop after the answer's delay:
            // concurrent streams of one connection each get their answer flushed.
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            let respond = self.respond
            Task {
                let response = await respond(request)
                eventLoop.scheduleTask(in: .milliseconds(Int64(response.delay * 1000))) {
                    let (handler, context) = loopBound.value
                    handler.write(response, context: context)
                }
            }
        }
    }

    private func write(_ response: FakeResponse, context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) { headers.add(name: name, value: value) }
        headers.add(name: "content-length", value: String(response.body.count))
        let status = HTTPResponseStatus(statusCode: response.status)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: response.body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
