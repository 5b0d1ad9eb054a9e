import Foundation

// Strings and numbers, written as `JSONEncoder` writes them, and the values written without a
// frame (scalars, `JSONValue`, arrays of strings and integers, `Data`, `URL`, `Decimal`).

extension CanonicalJSONSession {
    static let escapedFlag: UInt8 = 1
    static let nonASCIIFlag: UInt8 = 2

    /// Writes `string` quoted and escaped as `JSONWriter` does with `.withoutEscapingSlashes`:
    /// `"` `\` and bytes below 0x20 only. Returns `escapedFlag` if an escape was written and
    /// `nonASCIIFlag` if a byte was 0x80 or above (sorting needs to know, for keys).
    ///
    /// Strings are most of an output's bytes and almost never need an escape, so the text is
    /// scanned eight bytes at a time (`needsEscape`) and copied in runs; only a word that
    /// holds a byte to escape is looked at byte by byte.
    ///
    /// A native string's bytes are read where they lie (`String.withUTF8Bytes`): `withUTF8` is
    /// mutating, and the copy it needed was a retain and a release, atomic on every core, for
    /// each of the million strings of `FoldProfile`'s outputs.
    @discardableResult
    func writeString(_ string: String) -> UInt8 {
        string.withUTF8Bytes { writeString(utf8: $0) }
    }

    @inline(__always)
    private func writeString(utf8: UnsafeBufferPointer<UInt8>) -> UInt8 {
        if let any = writePlainString(utf8) {
            return any & Self.wordHighBits != 0 ? Self.nonASCIIFlag : 0
        }
        return writeEscapedString(utf8: utf8)
    }

    /// Writes `utf8` quoted when no byte of it needs an escape, checking and copying it a word at
    /// a time, and returns the OR of its words (for `nonASCIIFlag`); nil, with nothing written,
    /// when a byte needs an escape.
    ///
    /// Why: nearly every string the fleet writes needs no escape. The loop of
    /// `writeEscapedString` checked words but took the last zero to seven bytes one at a time
    /// and copied the text with a `memcpy` call: about 185 instructions a string, most of them
    /// for the short strings of a decision (`Benchmarks/README.md`, "Runtime, fourteenth
    /// round"). Here the last bytes are one more word, read overlapping the one before (or, for
    /// a string under eight bytes, assembled over spaces, which need no escape), and each word
    /// checked is stored as it is; the room reserved has eight spare bytes for the last store.
    @inline(__always)
    private func writePlainString(_ utf8: UnsafeBufferPointer<UInt8>) -> UInt64? {
        let count = utf8.count
        guard let source = utf8.baseAddress, count > 0 else {
            bytes.append(.quote)
            bytes.append(.quote)
            return 0
        }
        let out = bytes.tail(reserving: count &+ 10)
        out[0] = .quote
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(out + 1)
        var any: UInt64 = 0
        if count < 8 {
            var word: UInt64 = 0x2020_2020_2020_2020
            for i in 0..<count {
                let shift = UInt64(truncatingIfNeeded: i &* 8)
                word = word & ~(0xFF &<< shift) | UInt64(source[i]) &<< shift
            }
            if Self.needsEscape(word) { return nil }
            to.storeBytes(of: UInt64(littleEndian: word), as: UInt64.self)
            any = word
        } else {
            var i = 0
            while i &+ 8 <= count {
                let word = from.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if Self.needsEscape(word) { return nil }
                to.storeBytes(of: word, toByteOffset: i, as: UInt64.self)
                any |= word
                i &+= 8
            }
            if i < count {
                let last = count &- 8
                let word = from.loadUnaligned(fromByteOffset: last, as: UInt64.self)
                if Self.needsEscape(word) { return nil }
                to.storeBytes(of: word, toByteOffset: last, as: UInt64.self)
                any |= word
            }
        }
        out[count &+ 1] = .quote
        bytes.commitTail(count &+ 2)
        return any
    }

    /// `writeString` for text with a byte to escape: words without one are copied in runs, the
    /// rest byte by byte.
    private func writeEscapedString(utf8: UnsafeBufferPointer<UInt8>) -> UInt8 {
        bytes.append(.quote)
        var flags: UInt8 = 0
        var mark = 0
        var any: UInt64 = 0
        var i = 0
        let count = utf8.count
        let raw = UnsafeRawBufferPointer(utf8)
        while i < count {
            if i &+ 8 <= count {
                let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                any |= word
                if !Self.needsEscape(word) {
                    i &+= 8
                    continue
                }
            }
            let end = Swift.min(i &+ 8, count)
            while i < end {
                let byte = utf8[i]
                any |= UInt64(byte)
                i &+= 1
                guard byte < 0x20 || byte == .quote || byte == .backslash else { continue }
                flags = Self.escapedFlag
                if mark < i &- 1 { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<(i &- 1)])) }
                mark = i
                bytes.append(.backslash)
                switch byte {
                case .quote, .backslash: bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append("u00")
                    bytes.append(Self.hexDigit(byte >> 4))
                    bytes.append(Self.hexDigit(byte & 0xF))
                }
            }
        }
        if mark < count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...])) }
        bytes.append(.quote)
        if any & 0x8080_8080_8080_8080 != 0 { flags |= Self.nonASCIIFlag }
        return flags
    }

    /// Writes `time` quoted, as `writeString(time.rfc3339)` does, from its bytes on the stack
    /// (digits and `-:.TZ`, nothing to escape) instead of a `String` made for it.
    func writeTimestamp(_ time: Timestamp) {
        let written: Void? = time.withRFC3339UTF8 { utf8 in
            bytes.append(.quote)
            bytes.append(contentsOf: utf8)
            bytes.append(.quote)
        }
        if written == nil { writeString(time.rfc3339Spelled) }
    }

    /// Whether one of the eight bytes of `word` is below 0x20, `"` or `\` (the bytes a JSON
    /// string escapes), exactly (see `escapeStops`). `CanonicalJSONEncoderTests` checks every
    /// byte value, alone and paired, at every place of a word.
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> Bool {
        escapeStops(word) != 0
    }

    /// The high bit of each byte of `word` that is below 0x20, `"` or `\`, and possibly of
    /// bytes above such a byte (a borrow only runs on upwards from a byte that matches): zero
    /// exactly when there is none, and the lowest bit set, read little-endian, is the first.
    /// The plain-string scanner of the decoder adds its own bytes to the same tests
    /// (`PlainRecordDecoding.Scanner.stops`).
    @inline(__always)
    static func escapeStops(_ word: UInt64) -> UInt64 {
        let control = (word &- wordOnes &* 0x20) & ~word & wordHighBits
        return control | matches(.quote, in: word) | matches(.backslash, in: word)
    }

    /// The high bit of each byte of `word` that is `byte`, and possibly of bytes above one (the
    /// classic zero-byte test on `word ^ byte…`: a borrow only runs on from a byte that matches).
    @inline(__always)
    static func matches(_ byte: UInt8, in word: UInt64) -> UInt64 {
        let difference = word ^ (wordOnes &* UInt64(byte))
        return (difference &- wordOnes) & ~difference & wordHighBits
    }

    /// 0x01 and 0x80 in each byte of a word, for the eight-bytes-at-a-time tests.
    static let wordOnes: UInt64 = 0x0101_0101_0101_0101
    static let wordHighBits: UInt64 = 0x8080_8080_8080_8080

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    @inline(__always)
    func writeInteger(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        writeUnsigned(value.magnitude)
    }

    /// Decimal digits, as `description` gives them, without making a `String`.
    @inline(__always)
    func writeUnsigned(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(truncatingIfNeeded: value) &+ UInt8(ascii: "0"))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var rest = value
            var i = 20
            while rest > 0 {
                i -= 1
                digits[i] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
                rest /= 10
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i..<20]))
        }
    }

    /// `JSONEncoder`'s number text for a floating-point value: its `description` without a
    /// trailing `.0`. NaN and infinity are `JSONEncoder`'s to refuse (with its error).
    func writeFloatingPoint<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) throws {
        guard value.isFinite else { throw NeedsFoundation() }
        var text = value.description
        text.withUTF8 { utf8 in
            var count = utf8.count
            if count >= 2 && utf8[count - 2] == UInt8(ascii: ".") && utf8[count - 1] == UInt8(ascii: "0") { count -= 2 }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[..<count]))
        }
    }

    func writeBool(_ value: Bool) {
        bytes.append(value ? "true" : "false")
    }

    func writeNull() {
        bytes.append("null")
    }

    /// Writes values whose bytes are known without asking them to encode themselves; false for
    /// any other type. `Data`, `URL` and `Decimal` must come here: `JSONEncoder` special-cases
    /// them the same way instead of calling their `encode(to:)`.
    @inline(__always)
    func writeDirect<T: Encodable>(_ value: T) throws -> Bool {
        if T.self == String.self { writeString(Self.cast(value, to: String.self)); return true }
        if T.self == Int.self { writeInteger(Int64(Self.cast(value, to: Int.self))); return true }
        if T.self == JSONValue.self { try writeJSONValue(Self.cast(value, to: JSONValue.self)); return true }
        if T.self == Bool.self { writeBool(Self.cast(value, to: Bool.self)); return true }
        if T.self == Int64.self { writeInteger(Self.cast(value, to: Int64.self)); return true }
        if T.self == [String].self {
            let array = Self.cast(value, to: [String].self)
            bytes.append(.openBracket)
            for (i, element) in array.enumerated() {
                if i > 0 { bytes.append(.comma) }
                writeString(element)
            }
            bytes.append(.closeBracket)
            return true
        }
        if T.self == JSONObject.self { try writeJSONObject(Self.cast(value, to: JSONObject.self)); return true }
        if T.self == [Int].self {
            let array = Self.cast(value, to: [Int].self)
            bytes.append(.openBracket)
            for (i, element) in array.enumerated() {
                if i > 0 { bytes.append(.comma) }
                writeInteger(Int64(element))
            }
            bytes.append(.closeBracket)
            return true
        }
        if T.self == Double.self { try writeFloatingPoint(Self.cast(value, to: Double.self)); return true }
        if T.self == UInt64.self { writeUnsigned(Self.cast(value, to: UInt64.self)); return true }
        if T.self == Data.self { writeString(Self.cast(value, to: Data.self).base64EncodedString()); return true }
        if T.self == URL.self { writeString(Self.cast(value, to: URL.self).absoluteString); return true }
        if T.self == Decimal.self {
            var text = Self.cast(value, to: Decimal.self).description
            text.withUTF8 { bytes.append(contentsOf: $0) }
            return true
        }
        return false
    }

    /// `value` as `U`, for a `T` just checked to be `U`.
    @inline(__always)
    static func cast<T, U>(_ value: T, to: U.Type) -> U {
        withUnsafePointer(to: value) { UnsafeRawPointer($0).assumingMemoryBound(to: U.self).pointee }
    }

    // MARK: JSONValue

    /// A `JSONValue` as its `encode(to:)` writes it through `JSONEncoder`, without containers.
    func writeJSONValue(_ value: JSONValue) throws {
        switch value {
        case .null: writeNull()
        case .bool(let b): writeBool(b)
        case .int(let i): writeInteger(i)
        case .double(let d): try writeFloatingPoint(d)
        case .string(let s): writeString(s)
        case .array(let elements):
            bytes.append(.openBracket)
            for (i, element) in elements.enumerated() {
                if i > 0 { bytes.append(.comma) }
                try writeJSONValue(element)
            }
            bytes.append(.closeBracket)
        case .object(let members):
            try writeJSONObject(members)
        }
    }

    /// An object's members in key order, by their UTF-8 bytes (the order `closeObject` gives a
    /// keyed container's members), which is the order a `JSONObject` keeps them in.
    ///
    /// Why not through a frame, as a keyed container: that wrote the members, noted each, then
    /// sorted and rewrote them through a scratch buffer, two thirds of writing an intent's data
    /// or an item's (`Benchmarks/FoldProfile`: 2.411G → 2.372G instructions, −1.6 %).
    func writeJSONObject(_ members: JSONObject) throws {
        bytes.append(.openBrace)
        for position in members.indices {
            if position > 0 { bytes.append(.comma) }
            let member = members[position]
            writeString(member.key)
            bytes.append(.colon)
            try writeJSONValue(member.value)
        }
        bytes.append(.closeBrace)
    }
}
