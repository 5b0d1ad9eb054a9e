/// One partition of one topic.
public struct TopicPartition: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(_ topic: String, _ partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public static func < (lhs: TopicPartition, rhs: TopicPartition) -> Bool {
        (lhs.topic, lhs.partition) < (rhs.topic, rhs.partition)
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A record header. Kafka allows repeated names and null values.
public struct KafkaHeader: Hashable, Sendable {
    public var name: String
    public var value: [UInt8]?

    public init(_ name: String, _ value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    /// A header whose value is the UTF-8 of `value`.
    public init(_ name: String, _ value: String) {
        self.init(name, Array(value.utf8))
    }
}

/// What a record's timestamp means.
public enum TimestampType: Sendable, Hashable {
    /// Set by the producer (`ProducerRecord.timestamp`, or the producer's clock when absent).
    case createTime
    /// Set by the broker when it appended the record (`message.timestamp.type=LogAppendTime`).
    case logAppendTime
}

/// The offsets bounding a partition: `low` is the first retained offset, `high` the offset the
/// next record will get. (Tansu reports a wrong `high`; don't derive lag from it in tests.)
public struct Watermarks: Hashable, Sendable {
    public var low: Int64
    public var high: Int64

    public init(low: Int64, high: Int64) {
        self.low = low
        self.high = high
    }
}

/// Where the broker stored a produced record.
public struct DeliveryReport: Hashable, Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64

    public init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A record to produce.
public struct ProducerRecord: Sendable, Hashable {
    public var topic: String
    /// An explicit partition, or `nil` for the partitioner (murmur2 of the key by default).
    public var partition: Int32?
    public var key: [UInt8]?
    public var value: [UInt8]?
    public var headers: [KafkaHeader]
    /// CreateTime in milliseconds since the Unix epoch; `nil` lets librdkafka use its clock.
    /// Fleet workers always set it from log time so re-runs produce identical records.
    public var timestamp: Int64?

    public init(topic: String, partition: Int32? = nil, key: [UInt8]?, value: [UInt8]?,
                headers: [KafkaHeader] = [], timestamp: Int64? = nil) {
        self.topic = topic
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
    }

    /// A record keyed by the UTF-8 of `key` (the fleet keys every record by `user_id`).
    public init(topic: String, partition: Int32? = nil, key: String, value: [UInt8]?,
                headers: [KafkaHeader] = [], timestamp: Int64? = nil) {
        self.init(topic: topic, partition: partition, key: Array(key.utf8), value: value,
                  headers: headers, timestamp: timestamp)
    }
}

/// A consumed record. Its bytes are copies owned by Swift; librdkafka's message is already freed.
public struct KafkaMessage: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]?
    public var headers: [KafkaHeader]
    /// Milliseconds since the Unix epoch, `nil` when the record has none.
    public var timestamp: Int64?
    public var timestampType: TimestampType?

    public init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8]?,
                headers: [KafkaHeader] = [], timestamp: Int64?, timestampType: TimestampType?) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp
        self.timestampType = timestampType
    }

    public var topicPartition: TopicPartition { TopicPartition(topic, partition) }

    /// The first header named `name`.
    public func header(_ name: String) -> [UInt8]? {
        headers.first { $0.name == name }?.value ?? nil
    }
}
