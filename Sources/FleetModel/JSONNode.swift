/// JSON as read by `JSONReader`, before anything is decoded from it.
///
/// Unlike `JSONValue` it keeps an object's members in the order written, duplicates included
/// (`JSONDecoder` takes the first of duplicate names, the simulator's reader took the last),
/// and a number as its token, so a field decides what the number must be.
package enum JSONNode {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    /// A string whose contents are not valid (a bad escape, a control character, ill-formed
    /// UTF-8); only the `.foundationCompatible` dialect keeps one, to fail when it is decoded.
    case invalidString
    case array([JSONNode])
    case object([(key: String, value: JSONNode)])
    /// An object with a member name that is not a valid string; only the `.foundationCompatible`
    /// dialect keeps one, to fail when it is decoded.
    case invalidObject

    /// The value of the first member named `key`, as `JSONDecoder` reads duplicate names.
    package func firstMember(_ key: String) -> JSONNode? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
    }

    /// This JSON as a `JSONValue` the way the simulator reads its input: of duplicate member
    /// names the last one wins, and integers beyond 64 bits become doubles. Only for text read
    /// in the `.strict` dialect, where every number token is already known to be valid.
    package var simulatorValue: JSONValue {
        switch self {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .string(let s): return .string(s)
        case .invalidString, .invalidObject: return .null  // unreachable for `.strict` text
        case .number(let number):
            switch number {
            case .int(let i): return .int(i)
            case .double(let d, _): return JSONNumber.integralOrDouble(d)
            case .bigInteger(_, let d): return JSONNumber.integralOrDouble(d)
            case .invalid: return .double(.nan)  // unreachable for `.strict` text
            }
        case .array(let elements): return .array(elements.map(\.simulatorValue))
        case .object(let members):
            var object = JSONObject(minimumCapacity: members.count)
            for (key, value) in members { object[key] = value.simulatorValue }
            return .object(object)
        }
    }
}

/// A JSON number token, classified once while reading.
package enum JSONNumber {
    /// Integer syntax (no fraction, no exponent) within `Int64`.
    case int(Int64)
    /// Any other well-formed, finite number, with its text (for integers beyond 2^53).
    case double(Double, String)
    /// Integer syntax beyond `Int64`; `Double` would lose its precision.
    case bigInteger(String, Double)
    /// Not RFC 8259 number syntax, or beyond the range of `Double`.
    case invalid(String)

    init(_ token: UnsafeBufferPointer<UInt8>) {
        switch Self.syntax(of: token) {
        case .malformed:
            self = .invalid(String(decoding: token, as: UTF8.self))
        case .integer:
            if let integer = Self.int64(token) {
                self = .int(integer)
                return
            }
            let text = String(decoding: token, as: UTF8.self)
            if let double = Double(text), double.isFinite { self = .bigInteger(text, double) } else { self = .invalid(text) }
        case .fractional:
            let text = String(decoding: token, as: UTF8.self)
            if let double = Double(text), double.isFinite { self = .double(double, text) } else { self = .invalid(text) }
        }
    }

    /// A number with an integral value is an integer, so `1e3` and `1000` read the same (the
    /// simulator's reading of its input).
    static func integralOrDouble(_ double: Double) -> JSONValue {
        if double.rounded() == double, abs(double) < 0x1p63 { return .int(Int64(double)) }
        return .double(double)
    }

    /// The whole number `JSONDecoder` reads into an integer type from a number written with a
    /// fraction or exponent (`double` is `text` as a Double), or nil where it throws.
    ///
    /// Foundation's rule (JSONDecoder's `_slowpath_unwrapFixedWidthInteger`): the Double must be
    /// a whole number the type holds; below 2^53 it is the value (`1.0000000000000001` reads
    /// as 1, `1e-400` as 0); from 2^53 up the text is read again as a decimal and its fraction
    /// dropped (`9007199254740993.0` reads as 9007199254740993), and `Int64.min` is refused.
    static func wholeNumber<T: FixedWidthInteger>(_ double: Double, text: String, as type: T.Type) -> T? {
        guard let value = T(exactly: double) else { return nil }
        if abs(double) < 0x1p53 { return value }
        guard let exact = truncatedDecimal(text), exact != .min else { return nil }
        return T(exactly: exact)
    }

    /// The integer Foundation's decimal fallback reads from a number's text, which is how
    /// `Decimal` parses and converts it: every digit, the fraction's too, into a 128-bit
    /// mantissa (digits past its capacity dropped), trailing zeros removed; then nil beyond
    /// `UInt64`, the fraction dropped, nil beyond `Int64`. (`9007199254740993.5` reads as
    /// 9007199254740993; `9999999999999999.9999999`, 23 digits, is refused although its Double
    /// is the whole number 10^16.)
    private static func truncatedDecimal(_ text: String) -> Int64? {
        var mantissa: UInt128 = 0
        var full = false
        var scale = 0
        var inFraction = false
        var negative = false
        var utf8 = text.utf8[...]
        if utf8.first == UInt8(ascii: "-") { negative = true; utf8 = utf8.dropFirst() }
        while let byte = utf8.first {
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                guard let e = Int(Substring(utf8.dropFirst())) else { return nil }  // accepts a leading + or -
                let (scaled, overflow) = scale.addingReportingOverflow(e)
                if overflow { return nil }
                scale = scaled
                break
            } else if !full {
                let (times10, o1) = mantissa.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.addingReportingOverflow(UInt128(byte &- UInt8(ascii: "0")))
                if o1 || o2 {
                    full = true
                    if !inFraction { scale += 1 }
                } else {
                    mantissa = next
                    if inFraction { scale -= 1 }
                }
            } else if !inFraction {
                scale += 1
            }
            utf8 = utf8.dropFirst()
        }
        while mantissa != 0, mantissa % 10 == 0 { mantissa /= 10; scale += 1 }
        guard var whole = UInt64(exactly: mantissa) else { return nil }
        // The caller has the number's Double within 2^53...2^63, so `scale` is small here.
        while scale < 0, whole > 0 { whole /= 10; scale += 1 }
        while scale > 0 {
            let (times10, overflow) = whole.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            whole = times10
            scale -= 1
        }
        guard let magnitude = Int64(exactly: whole) else { return nil }
        return negative ? -magnitude : magnitude
    }

    private enum Syntax { case integer, fractional, malformed }

    private static func syntax(of token: UnsafeBufferPointer<UInt8>) -> Syntax {
        var i = 0
        let n = token.count
        func isDigit(_ at: Int) -> Bool { at < n && token[at] >= UInt8(ascii: "0") && token[at] <= UInt8(ascii: "9") }
        if i < n, token[i] == UInt8(ascii: "-") { i += 1 }
        guard isDigit(i) else { return .malformed }
        if token[i] == UInt8(ascii: "0") { i += 1 } else { while isDigit(i) { i += 1 } }
        var syntax = Syntax.integer
        if i < n, token[i] == UInt8(ascii: ".") {
            syntax = .fractional
            i += 1
            guard isDigit(i) else { return .malformed }
            while isDigit(i) { i += 1 }
        }
        if i < n, token[i] == UInt8(ascii: "e") || token[i] == UInt8(ascii: "E") {
            syntax = .fractional
            i += 1
            if i < n, token[i] == UInt8(ascii: "+") || token[i] == UInt8(ascii: "-") { i += 1 }
            guard isDigit(i) else { return .malformed }
            while isDigit(i) { i += 1 }
        }
        return i == n ? syntax : .malformed
    }

    /// Integer syntax (already checked) as `Int64`, or nil when it does not fit.
    private static func int64(_ token: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = token[0] == UInt8(ascii: "-")
        var value: Int64 = 0
        for byte in token.dropFirst(negative ? 1 : 0) {
            let digit = Int64(byte &- UInt8(ascii: "0"))
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            // Accumulate negatively so Int64.min fits.
            let (next, o2) = times10.subtractingReportingOverflow(digit)
            if o1 || o2 { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }
}
