/// Decodes `Decodable` values from a `JSONNode` tree, throwing the same `DecodingError`s (kind,
/// expected type, coding path) as Foundation's `JSONDecoder` does for the same text, so
/// `RecordCodec`'s operator messages do not change.
///
/// It exists for speed: `JSONValue` fields are converted straight from the tree instead of
/// being probed kind by kind with a thrown error per miss, and keyed lookups scan the few
/// members of a record instead of building dictionaries.
final class JSONNodeDecoder: Decoder {
    let node: JSONNode
    let path: CodingPathNode

    init(_ node: JSONNode, path: CodingPathNode = .root) {
        self.node = node
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch node {
        case .object(let members):
            return KeyedDecodingContainer(NodeKeyedContainer<Key>(members: members, path: path))
        case .invalidObject:
            throw NodeDecoding.notValidJSON
        case .null:
            throw DecodingError.valueNotFound([String: Any].self, .init(
                codingPath: path.keys, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default:
            throw NodeDecoding.typeMismatch([String: Any].self, node, path)
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        switch node {
        case .array(let elements):
            return NodeUnkeyedContainer(elements: elements, path: path)
        case .null:
            throw DecodingError.valueNotFound([Any].self, .init(
                codingPath: path.keys, debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
        default:
            throw NodeDecoding.typeMismatch([Any].self, node, path)
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        NodeSingleValueContainer(node: node, path: path)
    }
}

/// The coding path as a chain from the innermost key outwards: extending it costs one small
/// allocation and the `[CodingKey]` array is only built when someone asks (mostly for errors).
indirect enum CodingPathNode: Sendable {
    case root
    case member(String, CodingPathNode)
    case index(Int, CodingPathNode)

    var keys: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while true {
            switch node {
            case .root: return keys.reversed()
            case .member(let name, let parent): keys.append(NodeKey(stringValue: name)); node = parent
            case .index(let i, let parent): keys.append(NodeKey(index: i)); node = parent
            }
        }
    }
}

/// A member name or array index in a coding path (like `JSONDecoder`'s own key type, an index
/// has an `intValue`, which `RecordCodec` prints as `[i]`).
struct NodeKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    init?(intValue: Int) { self.init(index: intValue) }
    init(index: Int) { self.stringValue = "Index \(index)"; self.intValue = index }
}

/// The conversions shared by the three containers, with `JSONDecoder`'s errors.
enum NodeDecoding {
    /// `JSONDecoder` reports a number that does not fit the field's type, or a string with
    /// invalid contents, as invalid JSON at the root.
    static var notValidJSON: DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON."))
    }

    static func typeMismatch(_ type: Any.Type, _ node: JSONNode, _ path: @autoclosure () -> CodingPathNode) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path().keys, debugDescription: "Expected to decode \(type) but found \(node.kindName) instead."))
    }

    static func valueNotFound(_ type: Any.Type, _ path: @autoclosure () -> CodingPathNode) -> DecodingError {
        .valueNotFound(type, .init(codingPath: path().keys, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
    }

    static func string(_ node: JSONNode, _ path: @autoclosure () -> CodingPathNode) throws -> String {
        switch node {
        case .string(let s): return s
        case .invalidString: throw notValidJSON
        case .null: throw valueNotFound(String.self, path())
        default: throw typeMismatch(String.self, node, path())
        }
    }

    static func bool(_ node: JSONNode, _ path: @autoclosure () -> CodingPathNode) throws -> Bool {
        switch node {
        case .bool(let b): return b
        case .null: throw valueNotFound(Bool.self, path())
        default: throw typeMismatch(Bool.self, node, path())
        }
    }

    static func integer<T: FixedWidthInteger>(_ node: JSONNode, _ path: @autoclosure () -> CodingPathNode) throws -> T {
        switch node {
        case .number(.int(let i)):
            guard let value = T(exactly: i) else { throw notValidJSON }
            return value
        case .number(.double(let d, let text)):
            guard let value = JSONNumber.wholeNumber(d, text: text, as: T.self) else { throw notValidJSON }
            return value
        case .number(.bigInteger), .number(.invalid): throw notValidJSON
        case .null: throw valueNotFound(T.self, path())
        default: throw typeMismatch(T.self, node, path())
        }
    }

    static func double(_ node: JSONNode, _ path: @autoclosure () -> CodingPathNode) throws -> Double {
        switch node {
        case .number(.int(let i)): return Double(i)
        case .number(.double(let d, _)), .number(.bigInteger(_, let d)): return d
        case .number(.invalid): throw notValidJSON
        case .null: throw valueNotFound(Double.self, path())
        default: throw typeMismatch(Double.self, node, path())
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ node: JSONNode, _ path: @autoclosure () -> CodingPathNode) throws -> T {
        // The free-form parts of records, converted without going through `Decoder` at all.
        if let direct = T.self as? any NodeDecodable.Type, let value = try direct.init(node: node, path: path()) as? T {
            return value
        }
        return try T(from: JSONNodeDecoder(node, path: path()))
    }
}

/// Types decoded straight from the tree, without a `Decoder` in between.
protocol NodeDecodable {
    init(node: JSONNode, path: @autoclosure () -> CodingPathNode) throws
}

extension String: NodeDecodable {
    init(node: JSONNode, path: @autoclosure () -> CodingPathNode) throws { self = try NodeDecoding.string(node, path()) }
}

extension JSONValue: NodeDecodable {}

extension JSONObject: NodeDecodable {
    init(node: JSONNode, path: @autoclosure () -> CodingPathNode) throws { self = try JSONValue.object(node: node, path: path()) }
}

extension JSONNode {
    /// How `JSONDecoder` names a JSON kind in its type-mismatch descriptions.
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .number: "number"
        case .string, .invalidString: "a string"
        case .array: "an array"
        case .object, .invalidObject: "a dictionary"
        }
    }
}

struct NodeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [(key: String, value: JSONNode)]
    let path: CodingPathNode

    var codingPath: [any CodingKey] { path.keys }

    /// Member names as keys, the first of duplicates only.
    var allKeys: [Key] {
        var seen = Set<String>()
        return members.compactMap { seen.insert($0.key).inserted ? Key(stringValue: $0.key) : nil }
    }

    func contains(_ key: Key) -> Bool { member(key) != nil }

    /// The first member named `key`: `JSONDecoder` ignores later duplicates.
    private func member(_ key: Key) -> JSONNode? {
        let name = key.stringValue
        for member in members where member.key == name { return member.value }
        return nil
    }

    private func value(_ key: Key) throws -> JSONNode {
        guard let node = member(key) else {
            throw DecodingError.keyNotFound(key, .init(
                codingPath: path.keys, debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return node
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try value(key) { return true }
        return false
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try NodeDecoding.bool(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try NodeDecoding.string(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try NodeDecoding.double(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try NodeDecoding.double(try value(key), .member(key.stringValue, path))) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try NodeDecoding.integer(try value(key), .member(key.stringValue, path)) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try NodeDecoding.decode(type, try value(key), .member(key.stringValue, path))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONNodeDecoder(try value(key), path: .member(key.stringValue, path)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONNodeDecoder(try value(key), path: .member(key.stringValue, path)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        JSONNodeDecoder(member(key: "super") ?? .null, path: .member("super", path))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONNodeDecoder(member(key) ?? .null, path: .member(key.stringValue, path))
    }

    private func member(key name: String) -> JSONNode? {
        for member in members where member.key == name { return member.value }
        return nil
    }
}

struct NodeUnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONNode]
    let path: CodingPathNode
    private(set) var currentIndex = 0

    init(elements: [JSONNode], path: CodingPathNode) {
        self.elements = elements
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> (JSONNode, Int) {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(type, .init(
                codingPath: CodingPathNode.index(currentIndex, path).keys, debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return (elements[currentIndex], currentIndex)
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(Never.self, .init(
                codingPath: CodingPathNode.index(currentIndex, path).keys, debugDescription: "Unkeyed container is at end."))
        }
        if case .null = elements[currentIndex] { currentIndex += 1; return true }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let (n, i) = try next(type); return try NodeDecoding.bool(n, .index(i, path)) }
    mutating func decode(_ type: String.Type) throws -> String { let (n, i) = try next(type); return try NodeDecoding.string(n, .index(i, path)) }
    mutating func decode(_ type: Double.Type) throws -> Double { let (n, i) = try next(type); return try NodeDecoding.double(n, .index(i, path)) }
    mutating func decode(_ type: Float.Type) throws -> Float { let (n, i) = try next(type); return Float(try NodeDecoding.double(n, .index(i, path))) }
    mutating func decode(_ type: Int.Type) throws -> Int { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let (n, i) = try next(type); return try NodeDecoding.integer(n, .index(i, path)) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (n, i) = try next(type)
        return try NodeDecoding.decode(type, n, .index(i, path))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (n, i) = try next([String: Any].self)
        return try JSONNodeDecoder(n, path: .index(i, path)).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (n, i) = try next([Any].self)
        return try JSONNodeDecoder(n, path: .index(i, path)).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (n, i) = try next(Any.self)
        return JSONNodeDecoder(n, path: .index(i, path))
    }
}

struct NodeSingleValueContainer: SingleValueDecodingContainer {
    let node: JSONNode
    let path: CodingPathNode

    var codingPath: [any CodingKey] { path.keys }

    func decodeNil() -> Bool { if case .null = node { true } else { false } }
    func decode(_ type: Bool.Type) throws -> Bool { try NodeDecoding.bool(node, path) }
    func decode(_ type: String.Type) throws -> String { try NodeDecoding.string(node, path) }
    func decode(_ type: Double.Type) throws -> Double { try NodeDecoding.double(node, path) }
    func decode(_ type: Float.Type) throws -> Float { Float(try NodeDecoding.double(node, path)) }
    func decode(_ type: Int.Type) throws -> Int { try NodeDecoding.integer(node, path) }
    func decode(_ type: Int8.Type) throws -> Int8 { try NodeDecoding.integer(node, path) }
    func decode(_ type: Int16.Type) throws -> Int16 { try NodeDecoding.integer(node, path) }
    func decode(_ type: Int32.Type) throws -> Int32 { try NodeDecoding.integer(node, path) }
    func decode(_ type: Int64.Type) throws -> Int64 { try NodeDecoding.integer(node, path) }
    func decode(_ type: UInt.Type) throws -> UInt { try NodeDecoding.integer(node, path) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try NodeDecoding.integer(node, path) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try NodeDecoding.integer(node, path) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try NodeDecoding.integer(node, path) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try NodeDecoding.integer(node, path) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try NodeDecoding.decode(type, node, path) }
}

extension JSONValue {
    /// The free-form value at `path`. Integers beyond 64 bits are refused rather than rounded
    /// to a `Double`; everything else reads as `JSONValue`'s Foundation decoding read it (a
    /// whole number is an `.int`, whatever its notation).
    init(node: JSONNode, path: @autoclosure () -> CodingPathNode) throws {
        switch node {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .string(let s): self = .string(s)
        case .invalidString: throw NodeDecoding.notValidJSON
        case .invalidObject:
            // Foundation's probing could not open the object and ended on String.
            throw NodeDecoding.typeMismatch(String.self, node, path())
        case .number(.int(let i)): self = .int(i)
        case .number(.double(let d, let text)):
            // Foundation's probing tried Int64 before Double.
            if let integer = JSONNumber.wholeNumber(d, text: text, as: Int64.self) { self = .int(integer) } else { self = .double(d) }
        case .number(.bigInteger(let text, _)):
            throw DecodingError.dataCorrupted(.init(
                codingPath: path().keys,
                debugDescription: "integer \(text) is outside the 64-bit range (-9223372036854775808…9223372036854775807)"))
        case .number(.invalid):
            // Foundation found no kind that fits a malformed or infinite number and ended on String.
            throw NodeDecoding.typeMismatch(String.self, node, path())
        case .array(let elements):
            var array: [JSONValue] = []
            array.reserveCapacity(elements.count)
            for (i, element) in elements.enumerated() { array.append(try JSONValue(node: element, path: .index(i, path()))) }
            self = .array(array)
        case .object:
            self = .object(try JSONValue.object(node: node, path: path()))
        }
    }

    /// The JSON object at `path` (`JSONObject` fields such as `intent.data`).
    static func object(node: JSONNode, path: @autoclosure () -> CodingPathNode) throws -> JSONObject {
        switch node {
        case .object(let members):
            var object = JSONObject(minimumCapacity: members.count)
            for (key, value) in members where object[key] == nil {
                object[key] = try JSONValue(node: value, path: .member(key, path()))
            }
            return object
        case .invalidObject:
            throw NodeDecoding.notValidJSON
        case .null:
            throw DecodingError.valueNotFound([String: Any].self, .init(
                codingPath: path().keys, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        default:
            throw NodeDecoding.typeMismatch([String: Any].self, node, path())
        }
    }
}
