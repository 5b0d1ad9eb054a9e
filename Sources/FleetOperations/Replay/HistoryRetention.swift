/// Whether retention cut a history partition, which bounds how far back a replay can start (a
/// user whose last image before the range was deleted cannot be re-folded).
///
/// Why not simply "the first record read is above offset 0": under exactly-once, a first
/// transaction that aborted leaves its records and the abort marker at the partition's first
/// offsets, so a read-committed reader starts above 0 with nothing deleted. Only the log start
/// (the low watermark) says whether the brokers removed records.
public enum HistoryRetention {
    /// Where the kept history begins when retention removed older records (the log start), else
    /// nil. `firstRead` is the offset of the first record a read-committed reader saw.
    public static func cut(firstRead: Int64, logStart: Int64) -> Int64? {
        guard firstRead > 0, logStart > 0 else { return nil }
        return logStart
    }
}
