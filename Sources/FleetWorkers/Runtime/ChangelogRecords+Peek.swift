import FleetModel

extension ChangelogRecords {
    /// The `fleet-record` header value of a state record, as bytes (compared per record read).
    static let stateKindBytes: [UInt8] = Array(Kind.state.rawValue.utf8)
    /// The `fleet-record` header value of a position record, as bytes.
    static let positionKindBytes: [UInt8] = Array(Kind.position.rawValue.utf8)
}

extension ChangelogRecords {
    /// Where a binary state record's parts lie in its value, read without decoding the state or
    /// allocating: what restore needs to keep each user's last committed image (DESIGN.md
    /// principle 5, "superseded images are skipped without decoding").
    public struct StatePeek: Sendable {
        public var format: UInt32
        public var inputOffset: Int64
        /// The state image's bytes within the record's value.
        public var image: Range<Int>
        /// The state's next wake-up, when the writer recorded it (fields 4 and 5).
        public var wakeUp: WakeUp
    }

    /// Reads the protobuf wire format of a `fleet.state.ChangelogState` value: fields 1
    /// (format), 2 (input offset), 3 (state), 4 (next wake-up) and 5 (wake-up recorded), in any order, unknown fields skipped as the
    /// wire format says. Nil when the bytes are not such a message (truncated, a bad wire type,
    /// a length past the end, a missing field): the caller then decodes the record in full,
    /// which names the problem. Every read is bounds-checked, so no input can trap.
    ///
    /// Why by hand: SwiftProtobuf copies the state into a `Data` and the whole message into a
    /// struct; restoring a million users read more than a million records, and only the last
    /// image of each user is ever decoded.
    public static func peekState(_ value: [UInt8]) -> StatePeek? {
        value.withUnsafeBytes { peekState($0) }
    }

    /// `peekState` of bytes lent by a bulk reader (`KafkaRecordView.value`), read in place.
    public static func peekState(_ bytes: UnsafeRawBufferPointer) -> StatePeek? {
        var at = 0
        var format: UInt32?
        var inputOffset: Int64?
        var image: Range<Int>?
        var nextWakeUp: Int64?
        var wakeUpRecorded = false
        func varint() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while at < bytes.count, shift < 64 {
                let byte = bytes[at]
                at += 1
                result |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
            return nil
        }
        while at < bytes.count {
            guard let tag = varint() else { return nil }
            let field = tag >> 3
            switch tag & 7 {
            case 0:
                guard let number = varint() else { return nil }
                if field == 1 {
                    guard let small = UInt32(exactly: number) else { return nil }
                    format = small
                } else if field == 2 {
                    inputOffset = Int64(bitPattern: number)
                } else if field == 4 {
                    nextWakeUp = Int64(bitPattern: number)
                } else if field == 5 {
                    wakeUpRecorded = number != 0
                }
            case 1:
                guard bytes.count - at >= 8 else { return nil }
                at += 8
            case 2:
                guard let length = varint(), length <= UInt64(bytes.count - at) else { return nil }
                let end = at + Int(length)
                if field == 3 { image = at..<end }
                at = end
            case 5:
                guard bytes.count - at >= 4 else { return nil }
                at += 4
            default:
                return nil
            }
        }
        // A state field left out is the empty image (proto3 omits empty bytes).
        guard let format else { return nil }
        let wakeUp: WakeUp = wakeUpRecorded ? .recorded(nextWakeUp.map(Timestamp.init(millisecondsSinceEpoch:))) : .unrecorded
        return StatePeek(format: format, inputOffset: inputOffset ?? 0, image: image ?? 0..<0, wakeUp: wakeUp)
    }
}
