/// Writes a message of Protos/fleet_state.proto straight from a state, in protobuf's binary wire
/// format, byte for byte as SwiftProtobuf's `serializedBytes()` writes the same message.
///
/// Why not the generated messages: a changed user's image is written at every commit unit, and
/// building a `Fleet_State_DeliveryState` (a heap storage class, a copy of every string and list
/// into it, nested messages built with closures) and serialising it (a size pass over the whole
/// tree, then a write pass that sizes every nested message again) cost 25 900 instructions an
/// image, a fifth of the delivery worker's fold and seal; written here, 12 300, most of it the
/// pending intents' JSON data (`Benchmarks/README.md`, "Runtime, ninth round"). The generated
/// messages stay the schema's decoder and the tests' reference: `DirectImageTests` checks these
/// bytes against `serializedBytes()` of the message built field by field.
///
/// The rules are SwiftProtobuf's (and protobuf's canonical encoding): fields in field-number
/// order; a proto3 field without presence (`string`, `sint64`, `bool`, an enum…) only when it is
/// not its default; an `optional` field and a set message field always, even at zero or empty;
/// repeated numbers packed, and only when there is at least one; every element of a repeated
/// string or message, empty ones included. The callers keep the order; this type writes fields.
public struct ProtobufWireWriter {
    /// The bytes written so far.
    public var bytes: [UInt8] { buffer }

    @usableFromInline var buffer: [UInt8]

    /// A writer with room for `capacity` bytes (an estimate; it grows as needed).
    @inlinable
    public init(capacity: Int) {
        buffer = []
        buffer.reserveCapacity(capacity)
    }

    // MARK: Fields without presence (written only when not the default)

    /// A `uint32` or enum field.
    @inlinable
    public mutating func uint32(_ field: UInt32, _ value: UInt32) {
        if value != 0 { varintField(field, UInt64(value)) }
    }

    /// An `int64` field (negative values take ten bytes, as protobuf's two's complement varint).
    @inlinable
    public mutating func int64(_ field: UInt32, _ value: Int64) {
        if value != 0 { varintField(field, UInt64(bitPattern: value)) }
    }

    /// An `int32` field: sign-extended to 64 bits, as protobuf writes it.
    @inlinable
    public mutating func int32(_ field: UInt32, _ value: Int32) {
        if value != 0 { varintField(field, UInt64(bitPattern: Int64(value))) }
    }

    /// A `sint64` field (zigzag).
    @inlinable
    public mutating func sint64(_ field: UInt32, _ value: Int64) {
        if value != 0 { varintField(field, Self.zigzag(value)) }
    }

    @inlinable
    public mutating func bool(_ field: UInt32, _ value: Bool) {
        if value { varintField(field, 1) }
    }

    @inlinable
    public mutating func fixed64(_ field: UInt32, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, wireType: 1)
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    @inlinable
    public mutating func string(_ field: UInt32, _ value: String) {
        if !value.isEmpty { stringField(field, value) }
    }

    @inlinable
    public mutating func bytesField(_ field: UInt32, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        tag(field, wireType: 2)
        value.withUnsafeBufferPointer { lengthPrefixed($0) }
    }

    // MARK: Fields with presence (`optional`: written whenever set)

    @inlinable
    public mutating func optionalSInt64(_ field: UInt32, _ value: Int64?) {
        if let value { varintField(field, Self.zigzag(value)) }
    }

    @inlinable
    public mutating func optionalInt64(_ field: UInt32, _ value: Int64?) {
        if let value { varintField(field, UInt64(bitPattern: value)) }
    }

    @inlinable
    public mutating func optionalString(_ field: UInt32, _ value: String?) {
        if let value { stringField(field, value) }
    }

    // MARK: Repeated fields

    /// Every element, empty strings included.
    @inlinable
    public mutating func repeatedString(_ field: UInt32, _ values: [String]) {
        for value in values { stringField(field, value) }
    }

    /// A packed `repeated sint64`; nothing when empty.
    @inlinable
    public mutating func packedSInt64<Values: Collection>(_ field: UInt32, _ values: Values) where Values.Element: BinaryInteger {
        guard !values.isEmpty else { return }
        delimited(field) { writer in
            for value in values { writer.varint(Self.zigzag(Int64(value))) }
        }
    }

    /// A packed `repeated uint64`; nothing when empty.
    @inlinable
    public mutating func packedUInt64<Values: Collection>(_ field: UInt32, _ values: Values) where Values.Element: BinaryInteger {
        guard !values.isEmpty else { return }
        delimited(field) { writer in
            for value in values { writer.varint(UInt64(value)) }
        }
    }

    // MARK: Length-delimited content

    /// A message field (always written: the caller decides whether it is set), or any
    /// length-delimited field whose payload `body` writes.
    ///
    /// The length goes before the payload but is only known after it: one byte is kept for it,
    /// which is all a payload under 128 bytes needs; a longer payload is moved up to make room
    /// for its length's other bytes.
    @inlinable
    public mutating func delimited<E: Error>(_ field: UInt32, _ body: (inout ProtobufWireWriter) throws(E) -> Void) throws(E) {
        tag(field, wireType: 2)
        let lengthAt = buffer.count
        buffer.append(0)
        try body(&self)
        let length = buffer.count - lengthAt - 1
        if length < 0x80 {
            buffer[lengthAt] = UInt8(truncatingIfNeeded: length)
            return
        }
        var prefix = ProtobufWireWriter(capacity: 10)
        prefix.varint(UInt64(length))
        buffer.replaceSubrange(lengthAt...lengthAt, with: prefix.buffer)
    }

    /// Raw payload bytes inside `delimited`.
    @inlinable
    public mutating func append(contentsOf payload: some Sequence<UInt8>) {
        buffer.append(contentsOf: payload)
    }

    /// Raw payload bytes inside `delimited`, `count` of them, stored in place by `body`: one
    /// append for a run of fixed-width values (a packed list of ids) instead of one per value.
    @inlinable
    public mutating func appendRaw(count: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: count))
        buffer.withUnsafeMutableBytes { body(UnsafeMutableRawBufferPointer(rebasing: $0[start...])) }
    }

    // MARK: Wire primitives

    /// A native string's bytes are read where they lie: `withUTF8` is mutating, and the copy it
    /// needs costs a retain and a release.
    @inlinable
    mutating func stringField(_ field: UInt32, _ value: String) {
        tag(field, wireType: 2)
        if value.utf8.withContiguousStorageIfAvailable({ lengthPrefixed($0) }) != nil { return }
        var contiguous = value
        contiguous.withUTF8 { lengthPrefixed($0) }
    }

    /// A length-delimited payload: its length, then its bytes.
    @inlinable
    mutating func lengthPrefixed(_ payload: UnsafeBufferPointer<UInt8>) {
        varint(UInt64(payload.count))
        buffer.append(contentsOf: payload)
    }

    @inlinable
    mutating func varintField(_ field: UInt32, _ value: UInt64) {
        tag(field, wireType: 0)
        varint(value)
    }

    @inlinable
    mutating func tag(_ field: UInt32, wireType: UInt32) {
        varint(UInt64(field << 3 | wireType))
    }

    @inlinable
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            buffer.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        buffer.append(UInt8(truncatingIfNeeded: rest))
    }

    @inlinable
    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }
}
