#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A deliberately dumb HTTP/1.1 client over a blocking POSIX socket: it sends exactly the bytes
/// a test writes (malformed ones included) and parses responses by hand, so the probe server is
/// checked by code that shares nothing with it. Every read times out after 5 s.
final class RawHTTPConnection {
    struct Response {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private var buffered: [UInt8] = []

    init(port: Int) throws {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(code)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard sent > 0 else { throw Failure(description: "write failed: errno \(errno)") }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Reads one response; `toHead` says it answers a HEAD request (headers only).
    func readResponse(toHead: Bool = false) throws -> Response {
        let headEnd = try readUntil { $0.firstRange(of: Array("\r\n\r\n".utf8)) }
        let headText = String(decoding: buffered[..<headEnd.lowerBound], as: UTF8.self)
        buffered.removeFirst(headEnd.upperBound)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard !lines.isEmpty else { throw Failure(description: "empty response head") }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "bad status line in \(headText)")
        }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        let length = toHead ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        _ = try readUntil { $0.count >= length ? $0.startIndex..<length : nil }
        let body = String(decoding: buffered.prefix(length), as: UTF8.self)
        buffered.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Whether the server closed the connection (reads end of stream) with nothing more to say.
    func isClosedByPeer() throws -> Bool {
        guard buffered.isEmpty else { return false }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return true }
        if count < 0 {
            // A reset also means closed; a time-out means the server kept it open.
            if errno == ECONNRESET { return true }
            return false
        }
        buffered.append(contentsOf: chunk[..<count])
        return false
    }

    private func readUntil(_ found: ([UInt8]) -> Range<Int>?) throws -> Range<Int> {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let range = found(buffered) { return range }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else {
                throw Failure(description: count == 0 ? "connection closed mid-response" : "read failed: errno \(errno)")
            }
            buffered.append(contentsOf: chunk[..<count])
        }
    }
}
