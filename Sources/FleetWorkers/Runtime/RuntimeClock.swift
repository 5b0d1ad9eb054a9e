import Foundation
import FleetModel

/// The runtime's only reads of the wall clock, in one place: when to write a tick and what it
/// says, and the security-latency metric. Neither reaches the logic except as a record read back
/// from the log (DESIGN.md "Time").
enum RuntimeClock {
    /// Now, to the millisecond (rounded down).
    static func wallClock() -> Timestamp {
        Timestamp(millisecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
    }

    /// `duration` in seconds, for metrics.
    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
