import Synchronization

/// What the pool reads of a connection without going to its event loop: how many calls it
/// carries, how many streams its server allows at once, and whether it takes new calls.
final class HTTP2ConnectionGauges: Sendable {
    /// Calls handed to the connection and not answered yet (queued, or on a stream).
    let load = Atomic<Int>(0)
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS say otherwise,
    /// the value RFC 9113 recommends as the least a server should allow).
    let maximumStreams = Atomic<Int>(100)
    /// False once the server sent GOAWAY or the connection closed.
    let takesCalls = Atomic<Bool>(true)
}
