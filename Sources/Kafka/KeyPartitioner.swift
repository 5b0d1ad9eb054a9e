import CRdKafka

/// The partition librdkafka's `murmur2_random` partitioner (the fleet's, and the Java client's
/// default) gives a key, for tools that must know where a user's records live without producing
/// (`fleetctl explain`, partition migration).
///
/// It calls librdkafka's own partitioner function, so it cannot drift from what the producers do;
/// `FleetTestSupport.JavaMurmur2` is the independent port the tests check both against.
public enum KeyPartitioner {
    public static func partition(forKey key: [UInt8], partitions: Int32) -> Int32 {
        precondition(partitions > 0, "a topic has at least one partition")
        return key.withUnsafeBytes { bytes in
            // A keyed call never touches the topic handle (only the key-less random path does).
            rd_kafka_msg_partitioner_murmur2_random(nil, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), bytes.count,
                                                    partitions, nil, nil)
        }
    }

    public static func partition(forKey key: String, partitions: Int) -> Int32 {
        partition(forKey: Array(key.utf8), partitions: Int32(partitions))
    }
}
