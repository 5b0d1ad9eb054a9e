public import FleetModel

/// Exponential backoff with jitter taken from the attempt id instead of a random source, so a
/// replay waits exactly as long as the original run did, while retries of many deliveries
/// that failed together still spread out.
public enum Backoff {
    /// The wait before try `failedTries + 1` after `failedTries` retryable answers: between half
    /// and all of `base · 2^(failedTries-1)` (capped at `maximum`), never less than the
    /// provider's `Retry-After`.
    public static func delay(
        afterTries failedTries: Int, attemptId: String, base: TimeSpan, maximum: TimeSpan, retryAfter: TimeSpan? = nil
    ) -> TimeSpan {
        let exponent = min(max(failedTries - 1, 0), 30)
        let full = min(base.milliseconds.multipliedReportingOverflow(by: Int64(1) << exponent).partialValue, maximum.milliseconds)
        let half = max(full / 2, 1)
        let jitter = Int64(truncatingIfNeeded: stableHash(attemptId) % UInt64(half))
        let wait = TimeSpan(milliseconds: full - half + jitter)
        if let retryAfter, retryAfter > wait { return retryAfter }
        return wait
    }

    /// FNV-1a over the UTF-8 bytes: the same in every process (unlike `Hasher`, which is seeded
    /// per process).
    public static func stableHash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
