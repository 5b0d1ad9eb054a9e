/// Upper bounds on the wire size of a state image's parts, for `BinaryStateImage.binaryImageSizeBound()`.
///
/// Why bounds and not sizes: the runtime only needs to know that a state is under its limit
/// (`RecordLimits.maxStateBytes`) to skip encoding it at every change; a bound that counts each
/// field at its widest (a two-byte tag, a ten-byte varint, a five-byte length) needs no knowledge
/// of the values' varint widths or of the encoder, and stays true whatever the values are.
public enum ImageSizeBound {
    /// A varint or fixed field: its tag (field numbers below 2048 take at most two bytes) and at
    /// most ten bytes of value.
    public static let scalar = 12

    /// A length-delimited field (string, bytes, sub-message, packed list) with `payload` bytes:
    /// tag, a length of at most five bytes, and the payload.
    @inlinable public static func framed(_ payload: Int) -> Int { payload + 7 }

    /// A string field.
    @inlinable public static func string(_ value: String) -> Int { framed(value.utf8.count) }

    /// An optional string field (absent when nil).
    @inlinable public static func string(_ value: String?) -> Int { value.map(string) ?? 0 }

    /// A repeated string field.
    @inlinable public static func strings(_ values: [String]) -> Int {
        values.reduce(0) { $0 + string($1) }
    }

    /// A packed repeated varint field of `count` values.
    @inlinable public static func packed(count: Int) -> Int { framed(count * 10) }

    /// The canonical JSON of `object` (`CanonicalJSONEncoder`): every string counted as if each of
    /// its bytes needed the widest escape (`\u00XX`), every number at its longest form.
    public static func json(_ object: JSONObject) -> Int {
        object.reduce(2) { $0 + jsonString($1.key) + 2 + json($1.value) }
    }

    /// The canonical JSON of `value`, bounded as `json(_:)` describes.
    public static func json(_ value: JSONValue) -> Int {
        switch value {
        case .null: 4
        case .bool: 5
        case .int: 20
        case .double: 32
        case .string(let text): jsonString(text)
        case .array(let elements): elements.reduce(2) { $0 + json($1) + 1 }
        case .object(let object): json(object)
        }
    }

    @inlinable static func jsonString(_ text: String) -> Int { 2 + 6 * text.utf8.count }
}
