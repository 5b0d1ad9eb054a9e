/// An arbitrary JSON value, for the parts of records whose shape depends on another field
/// (`intent.data` by notification, `section.item`, event properties).
///
/// Integers are kept apart from other numbers so they round-trip exactly and encode without
/// a fraction, which keeps re-encoded records byte-identical.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d.rounded() == d && abs(d) < 1e15: return Int64(d)
        default: return nil
        }
    }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }

    public subscript(key: String) -> JSONValue? { objectValue?[key] }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public typealias Key = String
    public typealias Value = JSONValue
    public typealias ArrayLiteralElement = JSONValue
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject(minimumCapacity: elements.count)
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        // `RecordCodec`'s decoder hands over its tree: no probing, and integers beyond 64 bits
        // are refused instead of silently becoming doubles.
        if let nodeDecoder = decoder as? JSONNodeDecoder {
            self = try JSONValue(node: nodeDecoder.node, path: nodeDecoder.path)
            return
        }
        // Any other decoder (e.g. `JSONDecoder`) can only be asked kind by kind.
        if (try? decoder.container(keyedBy: JSONObject.Name.self)) != nil {
            self = .object(try JSONObject(from: decoder))
        } else if var array = try? decoder.unkeyedContainer() {
            var result: [JSONValue] = []
            while !array.isAtEnd { result.append(try array.decode(JSONValue.self)) }
            self = .array(result)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let b = try? single.decode(Bool.self) {
                self = .bool(b)
            } else if let i = try? single.decode(Int64.self) {
                self = .int(i)
            } else if let d = try? single.decode(Double.self) {
                self = .double(d)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var c = encoder.singleValueContainer(); try c.encodeNil()
        case .bool(let b):
            var c = encoder.singleValueContainer(); try c.encode(b)
        case .int(let i):
            var c = encoder.singleValueContainer(); try c.encode(i)
        case .double(let d):
            var c = encoder.singleValueContainer(); try c.encode(d)
        case .string(let s):
            var c = encoder.singleValueContainer(); try c.encode(s)
        case .array(let a):
            var c = encoder.unkeyedContainer()
            for element in a { try c.encode(element) }
        case .object(let o):
            try o.encode(to: encoder)
        }
    }
}
