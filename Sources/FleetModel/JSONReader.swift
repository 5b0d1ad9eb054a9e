/// One pass over JSON bytes into a `JSONNode` tree: the single JSON parser of the fleet, used by
/// `RecordCodec.decode` for every record a worker reads and by `fleetctl simulate` for its input
/// lines.
///
/// `JSONDecoder` into `JSONValue` tries each JSON kind in turn and pays for a thrown error per
/// failed try, at every nesting level; reading bytes once and decoding records from the tree
/// is several times cheaper (Benchmarks/RecordCodecProfile) and says where the text goes wrong.
package struct JSONReader {
    /// Which JSON the reader accepts.
    package struct Dialect: Sendable {
        /// RFC 8259 only, numbers range-checked while reading: the simulator's input lines.
        package static let strict = Dialect(
            allowsTrailingCommas: false, skipsByteOrderMark: false, maximumDepth: 256, checksValuesWhileReading: true)
        /// What Foundation's `JSONDecoder` accepts, so records that decoded before still decode:
        /// one trailing comma per array or object, a leading UTF-8 byte order mark, 512 levels,
        /// and number tokens and string contents that are only checked when a field is decoded
        /// from them (a malformed number or string in an ignored field does not reject the record).
        package static let foundationCompatible = Dialect(
            allowsTrailingCommas: true, skipsByteOrderMark: true, maximumDepth: 512, checksValuesWhileReading: false)

        var allowsTrailingCommas: Bool
        var skipsByteOrderMark: Bool
        /// Arrays and objects nested deeper than this are refused instead of overflowing the stack.
        var maximumDepth: Int
        /// Whether number tokens and string contents (escapes, control characters, UTF-8) are
        /// checked while reading, or only when a value is decoded from them.
        var checksValuesWhileReading: Bool
    }

    /// Where and why the text is not JSON.
    package struct Failure: Error, Equatable {
        /// 0-based byte offset of the problem.
        package var offset: Int
        package var reason: String
        /// A malformed token (a `\u` without four hex digits) ends the document in every dialect,
        /// as in `JSONDecoder`; other bad string contents may be deferred to decoding time.
        package var isMalformedToken: Bool

        package init(offset: Int, reason: String, isMalformedToken: Bool = false) {
            self.offset = offset; self.reason = reason; self.isMalformedToken = isMalformedToken
        }
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let dialect: Dialect
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>, dialect: Dialect) {
        self.bytes = bytes
        self.dialect = dialect
    }

    /// Reads one JSON text (surrounding whitespace allowed).
    package static func read(_ bytes: some Collection<UInt8>, dialect: Dialect) throws(Failure) -> JSONNode {
        let result: Result<JSONNode, Failure>? = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(Failure) in try read(buffer, dialect: dialect) }
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer in
            Result { () throws(Failure) in try read(buffer, dialect: dialect) }
        }.get()
    }

    private static func read(_ buffer: UnsafeBufferPointer<UInt8>, dialect: Dialect) throws(Failure) -> JSONNode {
        var reader = JSONReader(buffer, dialect: dialect)
        if dialect.skipsByteOrderMark, buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF {
            reader.index = 3
        }
        reader.skipWhitespace()
        let value = try reader.readValue()
        reader.skipWhitespace()
        guard reader.index == buffer.count else { throw reader.failure("unexpected text after the JSON value") }
        return value
    }

    private func failure(_ reason: String) -> Failure { Failure(offset: index, reason: reason) }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    private mutating func readValue() throws(Failure) -> JSONNode {
        guard index < bytes.count else { throw failure("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""):
            if dialect.checksValuesWhileReading { return .string(try readString()) }
            let start = index
            do {
                return .string(try readString())
            } catch where !error.isMalformedToken {
                index = start
                try skipString()
                return .invalidString
            }
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(dialect.checksValuesWhileReading ? try readNumber() : readNumberToken())
        default: throw failure("unexpected character")
        }
    }

    private mutating func expect(_ literal: StaticString) throws(Failure) {
        let utf8 = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for expected in utf8 {
            guard index < bytes.count else { throw failure("unexpected end of text") }
            guard bytes[index] == expected else { throw failure("unexpected character") }
            index += 1
        }
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        if depth > dialect.maximumDepth { throw failure("nested deeper than \(dialect.maximumDepth) levels") }
    }

    private mutating func readObject() throws(Failure) -> JSONNode {
        try enter()
        defer { depth -= 1 }
        index += 1  // {
        var members: [(key: String, value: JSONNode)] = []
        var hasInvalidName = false
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key: String
            if dialect.checksValuesWhileReading {
                key = try readString()
            } else {
                let start = index
                do {
                    key = try readString()
                } catch where !error.isMalformedToken {
                    index = start
                    try skipString()
                    hasInvalidName = true
                    key = ""
                }
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            members.append((key, try readValue()))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                if dialect.allowsTrailingCommas {
                    skipWhitespace()
                    if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return hasInvalidName ? .invalidObject : .object(members) }
                }
                continue
            }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return hasInvalidName ? .invalidObject : .object(members) }
            throw failure("expected ',' or '}'")
        }
    }

    private mutating func readArray() throws(Failure) -> JSONNode {
        try enter()
        defer { depth -= 1 }
        index += 1  // [
        var elements: [JSONNode] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try readValue())
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                if dialect.allowsTrailingCommas {
                    skipWhitespace()
                    if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                }
                continue
            }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw failure("expected ',' or ']'")
        }
    }

    private mutating func readString() throws(Failure) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes; ASCII (the usual case) needs no UTF-8 validation.
        var nonASCII: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let utf8 = UnsafeBufferPointer(rebasing: bytes[start..<index])
                let text = nonASCII < 0x80 ? String(decoding: utf8, as: UTF8.self) : try utf8String(utf8, at: start)
                index += 1
                return text
            }
            nonASCII |= byte
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw failure("control character in a string") }
            index += 1
        }
        var utf8 = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let text = try utf8.withUnsafeBufferPointer { buffer throws(Failure) in try utf8String(buffer, at: start) }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw failure("unexpected end of text") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &utf8)
                default: throw failure("invalid escape")
                }
            default:
                if byte < 0x20 { throw failure("control character in a string") }
                utf8.append(byte)
                index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// Moves past a string whose contents are not valid, to its closing quote.
    private mutating func skipString() throws(Failure) {
        index += 1  // opening quote
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""): index += 1; return
            case UInt8(ascii: "\\"): index += 2
            default: index += 1
            }
        }
        throw failure("unterminated string")
    }

    /// Refuses ill-formed UTF-8 (as `JSONDecoder` does) instead of repairing it.
    private func utf8String(_ buffer: UnsafeBufferPointer<UInt8>, at start: Int) throws(Failure) -> String {
        guard let text = String(validating: buffer, as: UTF8.self) else {
            throw Failure(offset: start, reason: "invalid UTF-8 in a string")
        }
        return text
    }

    /// Appends the UTF-8 of a `\uXXXX` escape (the `\u` already read), joining a surrogate pair.
    private mutating func appendUnicodeEscape(to utf8: inout [UInt8]) throws(Failure) {
        var scalar = try readHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw failure("unpaired surrogate in \\u escape")
            }
            index += 2
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate in \\u escape") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw failure("unpaired surrogate in \\u escape")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid \\u escape") }
        utf8.append(contentsOf: UTF8.encode(unicode).unsafelyUnwrapped)
    }

    /// A `\u` escape's four hex digits. Too few, even at the end of the text, make the whole
    /// document invalid, as in `JSONDecoder`, whichever member they are in.
    private mutating func readHex4() throws(Failure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw Failure(offset: index, reason: "unexpected end of text", isMalformedToken: true) }
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw Failure(offset: index, reason: "invalid \\u escape", isMalformedToken: true)
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }

    /// A number checked against RFC 8259's grammar and the range of `Double` while reading.
    private mutating func readNumber() throws(Failure) -> JSONNumber {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let number = JSONNumber(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        if case .invalid = number { throw failure("number out of range") }
        return number
    }

    /// The bytes that can belong to a number, checked only when a value is decoded from them,
    /// as `JSONDecoder` does.
    private mutating func readNumberToken() -> JSONNumber {
        let start = index
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."),
                UInt8(ascii: "e"), UInt8(ascii: "E"):
                index += 1
            default:
                return JSONNumber(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            }
        }
        return JSONNumber(UnsafeBufferPointer(rebasing: bytes[start..<index]))
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
