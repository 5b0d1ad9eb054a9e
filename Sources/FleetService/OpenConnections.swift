import FleetWorkers
import NIOCore
import Synchronization

/// The connections a server has open, so that stopping the server can close them: closing a
/// listening socket leaves its accepted connections open, and an idle keep-alive connection
/// would otherwise outlive the server.
final class OpenConnections: Sendable {
    private struct State {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var closing = false
    }

    private let state = Mutex(State())

    /// Tracks `channel` until it closes; one accepted while closing is closed at once.
    func insert(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let tracked = state.withLock { state -> Bool in
            guard !state.closing else { return false }
            state.channels[id] = channel
            return true
        }
        guard tracked else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in
            _ = self.state.withLock { $0.channels.removeValue(forKey: id) }
        }
    }

    func closeAll() {
        let open = state.withLock { state -> [any Channel] in
            state.closing = true
            defer { state.channels = [:] }
            return Array(state.channels.values)
        }
        for channel in open { channel.close(promise: nil) }
    }
}
