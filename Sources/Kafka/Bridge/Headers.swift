import CRdKafka

enum HeaderBridge {
    /// A new `rd_kafka_headers_t` (caller-owned) or nil when there are no headers.
    static func make(_ headers: [KafkaHeader]) -> OpaquePointer? {
        guard !headers.isEmpty else { return nil }
        let list = rd_kafka_headers_new(headers.count)!
        // Read in place (a span): iterating the array copied every header.
        let headers = headers.span
        for index in headers.indices {
            add(name: headers[index].name, value: headers[index].value, to: list)
        }
        return list
    }

    private static func add(name: String, value: [UInt8]?, to list: OpaquePointer) {
        if let value {
            value.withUnsafeBytes { bytes in
                _ = rd_kafka_header_add(list, name, -1, bytes.baseAddress, bytes.count)
            }
        } else {
            _ = rd_kafka_header_add(list, name, -1, nil, 0)
        }
    }

    /// Copies of a message's headers (the message keeps owning its header list).
    static func read(_ message: UnsafeMutablePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var list: OpaquePointer?
        guard rd_kafka_message_headers(message, &list) == RD_KAFKA_RESP_ERR_NO_ERROR, let list else { return [] }
        var result: [KafkaHeader] = []
        var index = 0
        var name: UnsafePointer<CChar>?
        var value: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(list, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
            result.append(KafkaHeader(name.map { String(cString: $0) } ?? "", bytes))
            index += 1
        }
        return result
    }
}
