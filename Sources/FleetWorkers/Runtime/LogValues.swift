/// How values read in log lines: `seconds=1.589`, not `1.5890851270000002`; `committed=0:25535,1:25120`,
/// not Swift's `[(key: 0, value: 25535), …]`.
enum LogValues {
    /// Seconds to the millisecond.
    static func seconds(_ value: Double) -> String {
        String((value * 1000).rounded() / 1000)
    }

    /// `partition:offset` pairs in partition order.
    static func offsets(_ offsets: [Int32: Int64]) -> String {
        offsets.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }
}
