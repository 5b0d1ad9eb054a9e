import DequeModule
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import NIOTLS

/// The last handler of a client connection's pipeline (after `NIOSSLClientHandler` and
/// `NIOHTTP2Handler`): runs many request/answer exchanges on one connection, each on a stream
/// of its own, without a child channel per stream.
///
/// Calls come in batches (`start`), everything a connection was handed since its event loop
/// last ran: their frames are written and then flushed once, so TLS encrypts and the socket
/// sends a whole batch at a time. `NIOHTTP2Handler` does the framing, HPACK, the stream state
/// machines, flow control on what is sent, and holds back new streams beyond the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS until others close; this handler gives out the stream ids
/// (odd, increasing, in the order frames are written), collects each answer, enforces the
/// deadlines, returns the connection's receive window, and fails what the server will not
/// answer (GOAWAY, reset, closed connection).
final class HTTP2CallsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// A call handed over by a caller, answered through `continuation` exactly once.
    struct Call {
        var request: HTTP2Request
        var continuation: CheckedContinuation<HTTP2Response, any Error>
    }

    private struct Exchange {
        var continuation: CheckedContinuation<HTTP2Response, any Error>
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
    }

    /// The connection-level receive window NIO starts with and this handler tops up (RFC 9113
    /// 6.9.2: 65 535 until changed by WINDOW_UPDATE).
    private static let receiveWindow = 65_535
    /// Stream ids are 31 bits; a connection this far along stops taking calls and is replaced.
    private static let lastStreamID = (1 << 31) - 1_000

    private let gauges: HTTP2ConnectionGauges
    private var context: ChannelHandlerContext?
    private var exchanges: [HTTP2StreamID: Exchange] = [:]
    /// Stream ids in the order they were opened, with their deadlines (one timeout per
    /// client, so the order of deadlines): the sweep looks at the front only.
    private var deadlines = Deque<(stream: HTTP2StreamID, deadline: NIODeadline)>()
    private var nextStreamID = 1
    /// Set once the connection cannot take calls: what new calls fail with.
    private var refusal: HTTP2CallError?
    /// Set when the server sent GOAWAY: the connection closes once its last answer is in.
    private var closesWhenIdle = false
    private var failure: HTTP2CallError = .connectionClosed
    private var sweep: RepeatedTask?
    /// Calls handed over before the server's first SETTINGS: until then its stream limit is
    /// not known, so they wait (and time out like the others).
    private var held: [Call] = []
    private var settingsReceived = false
    private var handshakeCompleted = false

    init(gauges: HTTP2ConnectionGauges) { self.gauges = gauges }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        // Deadlines are checked ten times a second: a timeout is measured in seconds.
        sweep = context.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { _ in
            handler.value.expire(now: .now())
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        self.context = nil
    }

    // MARK: Calls out

    /// Opens a stream for each call and writes its request, then flushes once.
    func start(_ calls: [Call]) {
        guard let context, refusal == nil else {
            for call in calls { answer(call.continuation, with: .failure(refusal ?? .connectionClosed)) }
            return
        }
        guard settingsReceived else {
            held += calls
            return
        }
        for call in calls {
            let stream = HTTP2StreamID(nextStreamID)
            nextStreamID += 2
            exchanges[stream] = Exchange(continuation: call.continuation)
            deadlines.append((stream, call.request.deadline))
            let body = call.request.body
            context.write(wrapOutboundOut(HTTP2Frame(
                streamID: stream, payload: .headers(.init(headers: call.request.headers, endStream: body.readableBytes == 0)))), promise: nil)
            if body.readableBytes > 0 {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))), promise: nil)
            }
        }
        context.flush()
        if nextStreamID > Self.lastStreamID { stopTakingCalls(.notProcessed, closeWhenIdle: true) }
    }

    // MARK: Answers in

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let stream = frame.streamID
        switch frame.payload {
        case .headers(let block):
            guard exchanges[stream] != nil else { return }
            if exchanges[stream]?.status == nil {
                guard let status = block.headers.first(name: ":status").flatMap({ Int($0) }) else {
                    return finish(stream, with: .failure(HTTP2CallError.streamReset(.protocolError)))
                }
                // 1xx answers are interim: the real one follows.
                if (100..<200).contains(status) { return }
                exchanges[stream]?.status = status
                exchanges[stream]?.headers = block.headers
            }
            if block.endStream { complete(stream) }
        case .data(let data):
            guard exchanges[stream] != nil else { return }
            if case .byteBuffer(var bytes) = data.data, bytes.readableBytes > 0 {
                if exchanges[stream]?.body == nil {
                    exchanges[stream]?.body = bytes
                } else {
                    exchanges[stream]?.body?.writeBuffer(&bytes)
                }
            }
            if data.endStream { complete(stream) }
        case .rstStream(let code):
            finish(stream, with: .failure(Self.resetError(code)))
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                gauges.maximumStreams.store(setting.value, ordering: .relaxed)
            }
            if !settingsReceived {
                settingsReceived = true
                let waiting = held
                held = []
                if !waiting.isEmpty { start(waiting) }
            }
        case .goAway(let lastStreamID, _, _):
            // Streams above the server's last one were not processed: fail them now (safe to
            // send again), let the others finish, then close.
            for stream in exchanges.keys where stream > lastStreamID {
                finish(stream, with: .failure(HTTP2CallError.notProcessed))
            }
            stopTakingCalls(.notProcessed, closeWhenIdle: true)
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            // A stream closed without its whole answer (reset, or dropped at GOAWAY).
            if exchanges[closed.streamID] != nil {
                finish(closed.streamID, with: .failure(Self.resetError(closed.reason ?? .cancel)))
            }
        case let window as NIOHTTP2WindowUpdatedEvent where window.streamID == .rootStream:
            // No stream multiplexer returns the connection's receive window here: top it up
            // once half is used, or answers would stop after 64 KiB of bodies.
            if let left = window.inboundWindowSize, left < Self.receiveWindow / 2 {
                context.writeAndFlush(wrapOutboundOut(HTTP2Frame(
                    streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.receiveWindow - left))), promise: nil)
            }
        case let tls as TLSUserEvent:
            if case .handshakeCompleted(let negotiated) = tls {
                handshakeCompleted = true
                if negotiated != "h2" {
                    failure = .noHTTP2
                    context.close(promise: nil)
                }
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Stream errors close their stream (StreamClosedEvent follows); anything else is the
        // connection's end.
        if error is NIOHTTP2Errors.StreamError { return }
        // A TLS error before the handshake is done is about trust (certificate, name); after
        // it, it is how the connection ended (an unclean shutdown).
        if !handshakeCompleted, error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError { failure = .tls }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTakingCalls(failure, closeWhenIdle: false)
        for stream in Array(exchanges.keys) { finish(stream, with: .failure(failure)) }
        let waiting = held
        held = []
        for call in waiting { answer(call.continuation, with: .failure(failure)) }
        context.fireChannelInactive()
    }

    // MARK: Bookkeeping

    /// REFUSED_STREAM says the server did nothing with the stream (RFC 9113 8.7), as a stream
    /// above a GOAWAY's last one.
    private static func resetError(_ code: HTTP2ErrorCode) -> HTTP2CallError {
        code == .refusedStream ? .notProcessed : .streamReset(code)
    }

    private func complete(_ stream: HTTP2StreamID) {
        guard let exchange = exchanges[stream], let status = exchange.status else {
            return finish(stream, with: .failure(HTTP2CallError.streamReset(.protocolError)))
        }
        finish(stream, with: .success(HTTP2Response(
            status: status, headers: exchange.headers, body: exchange.body ?? ByteBuffer())))
    }

    private func finish(_ stream: HTTP2StreamID, with result: Result<HTTP2Response, any Error>) {
        guard let exchange = exchanges.removeValue(forKey: stream) else { return }
        answer(exchange.continuation, with: result)
        if closesWhenIdle, exchanges.isEmpty { context?.close(promise: nil) }
    }

    private func answer(_ continuation: CheckedContinuation<HTTP2Response, any Error>, with result: Result<HTTP2Response, any Error>) {
        gauges.load.subtract(1, ordering: .relaxed)
        continuation.resume(with: result)
    }

    private func stopTakingCalls(_ reason: HTTP2CallError, closeWhenIdle: Bool) {
        gauges.takesCalls.store(false, ordering: .relaxed)
        if refusal == nil { refusal = reason }
        if closeWhenIdle {
            closesWhenIdle = true
            if exchanges.isEmpty { context?.close(promise: nil) }
        }
    }

    /// Fails the calls whose deadline has passed and resets their streams.
    private func expire(now: NIODeadline) {
        if !held.isEmpty {
            let (late, onTime) = (held.filter { $0.request.deadline <= now }, held.filter { $0.request.deadline > now })
            held = onTime
            for call in late { answer(call.continuation, with: .failure(HTTP2CallError.timeout)) }
        }
        var reset = false
        while let first = deadlines.first, first.deadline <= now || exchanges[first.stream] == nil {
            deadlines.removeFirst()
            guard exchanges[first.stream] != nil else { continue }
            finish(first.stream, with: .failure(HTTP2CallError.timeout))
            context?.write(wrapOutboundOut(HTTP2Frame(streamID: first.stream, payload: .rstStream(.cancel))), promise: nil)
            reset = true
        }
        if reset { context?.flush() }
    }
}
