public import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// One request a stand-in provider received.
public struct FakeRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [String: String]
    public var body: Data

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

    private init(port: Int, publicHost: String, channel: any Channel) {
        self.port = port; self.publicHost = publicHost; self.channel = channel
    }

    public var baseURL: String { "https://\(publicHost):\(port)" }

    /// - Parameters:
    ///   - host: the address to listen on (`0.0.0.0` in a container).
    ///   - port: the port, 0 for any free one (`port` tells which).
    ///   - publicHost: the name in `baseURL`, one of the names `authority` signed for.
    public static func start(
        authority: TestCertificateAuthority, host: String = "127.0.0.1", port: Int = 0, publicHost: String = "localhost",
        respond: @escaping @Sendable (FakeRequest) async -> FakeResponse
    ) async throws -> FakeHTTPServer {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(authority.serverCertificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(authority.serverKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
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
        return FakeHTTPServer(port: port, publicHost: publicHost, channel: channel)
    }

    public func stop() async throws { try await channel.close() }
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
