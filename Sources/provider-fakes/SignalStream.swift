import Dispatch
import Foundation

/// The first of a set of signals, awaited: the signals' default action is turned off and a
/// dispatch source reports them instead.
final class SignalStream {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>

    init(_ signals: Int32...) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    /// The next signal received.
    func next() async -> Int32 {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next() ?? SIGTERM
    }
}
