/// An independent port of the Java client's key partitioning, to check librdkafka's
/// `murmur2_random` against: `org.apache.kafka.common.utils.Utils.murmur2` (seed 0x9747b28c,
/// little-endian 4-byte blocks, Java's signed 32-bit arithmetic, fall-through tail) and the
/// default partitioner's `toPositive(murmur2(key)) % numPartitions`.
///
/// Tests use it to know, before producing, which partition a user's records land on (e.g. the
/// crash-equivalence traffic, which gives each inbox partition one writer per wave).
public enum JavaMurmur2 {
    public static func hash(_ data: [UInt8]) -> Int32 {
        let m: UInt32 = 0x5bd1e995
        let r: UInt32 = 24
        var h: UInt32 = 0x9747b28c ^ UInt32(truncatingIfNeeded: data.count)
        let blocks = data.count / 4
        for block in 0..<blocks {
            let i = block * 4
            var k = UInt32(data[i]) | UInt32(data[i + 1]) << 8 | UInt32(data[i + 2]) << 16 | UInt32(data[i + 3]) << 24
            k = k &* m
            k ^= k >> r
            k = k &* m
            h = h &* m
            h ^= k
        }
        let tail = blocks * 4
        let remainder = data.count % 4
        if remainder == 3 { h ^= UInt32(data[tail + 2]) << 16 }
        if remainder >= 2 { h ^= UInt32(data[tail + 1]) << 8 }
        if remainder >= 1 {
            h ^= UInt32(data[tail])
            h = h &* m
        }
        h ^= h >> 13
        h = h &* m
        h ^= h >> 15
        return Int32(bitPattern: h)
    }

    /// The Java default partitioner's choice for a non-null key.
    public static func partition(forKey key: [UInt8], partitions: Int32) -> Int32 {
        (hash(key) & 0x7fff_ffff) % partitions
    }
}
