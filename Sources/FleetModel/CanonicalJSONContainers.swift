// The `Encoder` and containers `CanonicalJSONEncoder` hands to `encode(to:)`. Each names its
// session's frame by depth and serial; every write checks it is still the frame being written
// (otherwise the value is encoded again by `JSONEncoder`, see `CanonicalJSONSession`).

/// The encoder for one value (one frame).
struct CanonicalJSONValueEncoder: Encoder {
    let session: CanonicalJSONSession
    let depth: Int

    var codingPath: [any CodingKey] { session.codingPath(depth: depth) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private var serial: UInt32 { session.frames.indices.contains(depth) ? session.frames[depth].serial : 0 }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        guard session.open(.object, depth: depth) else {
            session.needsFoundation = true
            return Self.detached(session).container(keyedBy: type)
        }
        return KeyedEncodingContainer(CanonicalJSONKeyedContainer<Key>(session: session, depth: depth, serial: serial))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        guard session.open(.array, depth: depth) else {
            session.needsFoundation = true
            return Self.detached(session).unkeyedContainer()
        }
        return CanonicalJSONUnkeyedContainer(session: session, depth: depth, serial: serial)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        CanonicalJSONSingleValueContainer(session: session, depth: depth, serial: serial)
    }

    /// An encoder writing into a throw-away session, for a container `JSONEncoder` would merge
    /// or refuse; the run is redone by `JSONEncoder`.
    static func detached(_ session: CanonicalJSONSession) -> CanonicalJSONValueEncoder {
        let scrap = CanonicalJSONSession(capacity: 16)
        scrap.needsFoundation = true
        scrap.pushFrame(.none)
        return CanonicalJSONValueEncoder(session: scrap, depth: 0)
    }
}

struct CanonicalJSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let session: CanonicalJSONSession
    let depth: Int
    let serial: UInt32

    var codingPath: [any CodingKey] { session.codingPath(depth: depth) }

    @inline(__always)
    private func begin(_ key: Key) throws {
        try session.requireCurrent(depth, serial)
        session.beginMember(key.stringValue, depth: depth)
    }

    mutating func encodeNil(forKey key: Key) throws { try begin(key); session.writeNull() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try begin(key); session.writeBool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try begin(key); session.writeString(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try begin(key); try session.writeFloatingPoint(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try begin(key); try session.writeFloatingPoint(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try begin(key); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try begin(key); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try begin(key); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try begin(key); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try begin(key); session.writeInteger(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try begin(key); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try begin(key); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try begin(key); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try begin(key); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try begin(key); session.writeUnsigned(value) }
    mutating func encode(_ value: Int128, forKey key: Key) throws {
        try begin(key)
        session.bytes.append(contentsOf: value.description.utf8)
    }
    mutating func encode(_ value: UInt128, forKey key: Key) throws {
        try begin(key)
        session.bytes.append(contentsOf: value.description.utf8)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try session.requireCurrent(depth, serial)
        let name = key.stringValue
        session.beginMember(name, depth: depth)
        try session.encodeNested(value, path: .key(name, key.intValue))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        guard let child = nestedChild(key, kind: .object) else {
            return CanonicalJSONValueEncoder.detached(session).container(keyedBy: keyType)
        }
        return KeyedEncodingContainer(CanonicalJSONKeyedContainer<NestedKey>(session: child, depth: 0, serial: child.frames[0].serial))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        guard let child = nestedChild(key, kind: .array) else {
            return CanonicalJSONValueEncoder.detached(session).unkeyedContainer()
        }
        return CanonicalJSONUnkeyedContainer(session: child, depth: 0, serial: child.frames[0].serial)
    }

    /// The child session for a nested container under `key`: the one already made for that
    /// key (as `JSONEncoder` reuses it), or a new one.
    private func nestedChild(_ key: Key, kind: CanonicalJSONSession.Kind) -> CanonicalJSONSession? {
        guard session.isCurrent(depth, serial) else { session.needsFoundation = true; return nil }
        let name = key.stringValue
        do {
            if let existing = try session.existingChild(named: name, depth: depth) {
                guard existing.frames.count == 1, existing.frames[0].kind == kind else {
                    session.needsFoundation = true
                    return nil
                }
                return existing
            }
        } catch {
            session.needsFoundation = true
            return nil
        }
        session.beginMember(name, depth: depth, child: Int32(session.children.count))
        return session.makeChild(root: kind, path: codingPath + [CanonicalJSONPathKey(stringValue: name, intValue: key.intValue)])
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(named: "super", intValue: nil)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key.stringValue, intValue: key.intValue)
    }

    private func superEncoder(named name: String, intValue: Int?) -> any Encoder {
        guard session.isCurrent(depth, serial) else {
            session.needsFoundation = true
            return CanonicalJSONValueEncoder.detached(session)
        }
        session.beginMember(name, depth: depth, child: Int32(session.children.count), isSuper: true)
        let child = session.makeChild(root: .empty, path: codingPath + [CanonicalJSONPathKey(stringValue: name, intValue: intValue)])
        return CanonicalJSONValueEncoder(session: child, depth: 0)
    }
}

struct CanonicalJSONUnkeyedContainer: UnkeyedEncodingContainer {
    let session: CanonicalJSONSession
    let depth: Int
    let serial: UInt32

    var codingPath: [any CodingKey] { session.codingPath(depth: depth) }
    var count: Int { session.isCurrent(depth, serial) ? session.frames[depth].count : 0 }

    @inline(__always)
    private func begin() throws {
        try session.requireCurrent(depth, serial)
        _ = session.beginElement(depth: depth)
    }

    mutating func encodeNil() throws { try begin(); session.writeNull() }
    mutating func encode(_ value: Bool) throws { try begin(); session.writeBool(value) }
    mutating func encode(_ value: String) throws { try begin(); session.writeString(value) }
    mutating func encode(_ value: Double) throws { try begin(); try session.writeFloatingPoint(value) }
    mutating func encode(_ value: Float) throws { try begin(); try session.writeFloatingPoint(value) }
    mutating func encode(_ value: Int) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int8) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int16) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int32) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try begin(); session.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { try begin(); session.writeUnsigned(value) }
    mutating func encode(_ value: Int128) throws { try begin(); session.bytes.append(contentsOf: value.description.utf8) }
    mutating func encode(_ value: UInt128) throws { try begin(); session.bytes.append(contentsOf: value.description.utf8) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try session.requireCurrent(depth, serial)
        let index = session.beginElement(depth: depth)
        try session.encodeNested(value, path: .index(index))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        guard let child = deferredElement(kind: .object) else {
            return CanonicalJSONValueEncoder.detached(session).container(keyedBy: keyType)
        }
        return KeyedEncodingContainer(CanonicalJSONKeyedContainer<NestedKey>(session: child, depth: 0, serial: child.frames[0].serial))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        guard let child = deferredElement(kind: .array) else {
            return CanonicalJSONValueEncoder.detached(session).unkeyedContainer()
        }
        return CanonicalJSONUnkeyedContainer(session: child, depth: 0, serial: child.frames[0].serial)
    }

    mutating func superEncoder() -> any Encoder {
        guard let child = deferredElement(kind: .empty) else { return CanonicalJSONValueEncoder.detached(session) }
        return CanonicalJSONValueEncoder(session: child, depth: 0)
    }

    /// An element written later through a child session, spliced in at this position.
    private func deferredElement(kind: CanonicalJSONSession.Kind) -> CanonicalJSONSession? {
        guard session.isCurrent(depth, serial) else { session.needsFoundation = true; return nil }
        let index = session.beginElement(depth: depth)
        session.entries.append(.init(start: session.bytes.count, keyEnd: 0, child: Int32(session.children.count), isSuper: kind == .empty))
        return session.makeChild(root: kind, path: codingPath + [CanonicalJSONPathKey(stringValue: "Index \(index)", intValue: index)])
    }
}

struct CanonicalJSONSingleValueContainer: SingleValueEncodingContainer {
    let session: CanonicalJSONSession
    let depth: Int
    let serial: UInt32

    var codingPath: [any CodingKey] { session.codingPath(depth: depth) }

    /// `JSONEncoder` allows one value per single-value container.
    @inline(__always)
    private func begin() throws {
        try session.requireCurrent(depth, serial)
        guard session.frames[depth].kind == .empty else { throw CanonicalJSONSession.NeedsFoundation() }
        session.frames[depth].kind = .single
    }

    mutating func encodeNil() throws { try begin(); session.writeNull() }
    mutating func encode(_ value: Bool) throws { try begin(); session.writeBool(value) }
    mutating func encode(_ value: String) throws { try begin(); session.writeString(value) }
    mutating func encode(_ value: Double) throws { try begin(); try session.writeFloatingPoint(value) }
    mutating func encode(_ value: Float) throws { try begin(); try session.writeFloatingPoint(value) }
    mutating func encode(_ value: Int) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int8) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int16) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int32) throws { try begin(); session.writeInteger(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try begin(); session.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { try begin(); session.writeUnsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { try begin(); session.writeUnsigned(value) }
    mutating func encode(_ value: Int128) throws { try begin(); session.bytes.append(contentsOf: value.description.utf8) }
    mutating func encode(_ value: UInt128) throws { try begin(); session.bytes.append(contentsOf: value.description.utf8) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try begin()
        try session.encodeNested(value, path: .none)
    }
}
