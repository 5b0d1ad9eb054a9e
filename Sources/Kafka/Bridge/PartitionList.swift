import CRdKafka

/// Conversions between Swift partition collections and `rd_kafka_topic_partition_list_t`.
/// Lists made here are owned by the caller of `make…` and destroyed with `rd_kafka_topic_partition_list_destroy`.
enum PartitionList {
    static func make(_ partitions: some Collection<TopicPartition>) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(clamping: partitions.count))!
        for tp in partitions {
            rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition)
        }
        return list
    }

    static func make(_ offsets: [TopicPartition: Int64]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(clamping: offsets.count))!
        for (tp, offset) in offsets.sorted(by: { $0.key < $1.key }) {
            rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition).pointee.offset = offset
        }
        return list
    }

    static func elements(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> UnsafeBufferPointer<rd_kafka_topic_partition_t> {
        UnsafeBufferPointer(start: list.pointee.elems, count: Int(list.pointee.cnt))
    }

    static func partitions(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition] {
        elements(list).map { TopicPartition(String(cString: $0.topic), $0.partition) }
    }

    /// Offsets per partition; partitions without a valid offset (`RD_KAFKA_OFFSET_INVALID`, i.e.
    /// nothing committed) are left out. Throws the first per-partition error.
    static func offsets(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) throws(KafkaError) -> [TopicPartition: Int64] {
        var result: [TopicPartition: Int64] = [:]
        for element in elements(list) {
            let tp = TopicPartition(String(cString: element.topic), element.partition)
            try KafkaError.check(element.err, "partition \(tp)")
            if element.offset >= 0 { result[tp] = element.offset }
        }
        return result
    }

    static func checkErrors(_ list: UnsafePointer<rd_kafka_topic_partition_list_t>) throws(KafkaError) {
        for element in elements(list) {
            try KafkaError.check(element.err, "partition \(String(cString: element.topic))[\(element.partition)]")
        }
    }
}
