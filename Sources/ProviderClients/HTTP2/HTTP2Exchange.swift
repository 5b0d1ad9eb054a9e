import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request sent on a stream of its own: its header block (pseudo-headers first) and a
/// body sent whole.
struct HTTP2Request: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    /// The answer must have come by then; else the call fails with `HTTP2CallError.timeout`
    /// and the stream is reset.
    var deadline: NIODeadline
}

/// A stream's answer: `:status`, the other headers and the whole body.
struct HTTP2Response: Sendable {
    var status: Int
    var headers: HPACKHeaders
    var body: ByteBuffer
}

/// Why a call got no answer. None of them quotes the request (an APNs path holds the device
/// token), and each is retryable for the sender: the provider may or may not have taken it.
enum HTTP2CallError: Error, Equatable, CustomStringConvertible {
    /// No answer by the request's deadline.
    case timeout
    /// The connection closed (or could not be opened) before the answer came.
    case connectionClosed
    /// The server did not process the call: GOAWAY without its stream, or REFUSED_STREAM.
    case notProcessed
    /// The server (or the HTTP/2 layer) reset the stream.
    case streamReset(HTTP2ErrorCode)
    /// The server did not agree to HTTP/2 by ALPN.
    case noHTTP2
    /// The TLS handshake failed (certificate not trusted, wrong name, …).
    case tls
    /// The pool was shut down.
    case shutDown

    var description: String {
        switch self {
        case .timeout: "timeout"
        case .connectionClosed: "connection closed"
        case .notProcessed: "not processed"
        case .streamReset(let code): "stream reset (\(code))"
        case .noHTTP2: "server does not speak HTTP/2"
        case .tls: "tls error"
        case .shutDown: "cancelled"
        }
    }
}
