// Intents read straight from their bytes, without building a tree of the whole record.
//
// Why: intents are most of what the delivery worker reads, and reading one went through the
// whole-record tree (`JSONReader`), the size check on the tree (`RecordLimits`) and the tree's
// release: about 7 % of a busy worker's CPU (RuntimeBenchmark profile). Only the free-form
// `data` object still goes through the tree.
//
// Only the plain case is read here: the members the fleet writes, each once, strings without
// escapes or non-ASCII bytes and short enough that no size limit can apply, numbers as plain
// integers. Anything else gives nil, and the record goes through `RecordCodec`'s tree path,
// which accepts or refuses it with its own errors, so this path never decides an error. It
// must give exactly the tree path's record wherever it gives one: `RecordCodecDifferentialTests`
// checks both against `JSONDecoder` on random, mutated and spaced-out records, and
// `IntentByteDecodingTests` that the plain case is taken here.

enum IntentByteDecoding {
    /// The intent in `bytes`, when it is written plainly; nil otherwise.
    static func intent(_ bytes: UnsafeBufferPointer<UInt8>) -> Intent? {
        var scanner = Scanner(bytes: bytes)
        return scanner.intent()
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        /// The members of an intent, as bits of `seen`.
        private enum Member: UInt16 {
            case v = 1, type = 2, id = 4, userId = 8, notification = 16, category = 32, data = 64, expiresAt = 128
            case source = 256

            static let required: UInt16 = 1 | 2 | 4 | 8 | 16 | 32 | 64 | 256

            init?(_ key: UnsafeBufferPointer<UInt8>) {
                switch key.count {
                case 1 where key[0] == UInt8(ascii: "v"): self = .v
                case 2 where Scanner.equal(key, "id"): self = .id
                case 4 where Scanner.equal(key, "type"): self = .type
                case 4 where Scanner.equal(key, "data"): self = .data
                case 6 where Scanner.equal(key, "source"): self = .source
                case 7 where Scanner.equal(key, "user_id"): self = .userId
                case 8 where Scanner.equal(key, "category"): self = .category
                case 10 where Scanner.equal(key, "expires_at"): self = .expiresAt
                case 12 where Scanner.equal(key, "notification"): self = .notification
                default: return nil
                }
            }
        }

        mutating func intent() -> Intent? {
            var seen: UInt16 = 0
            var id = "", userId = "", notification = "", category = ""
            var data: JSONObject = [:]
            var expiresAt: Timestamp?
            var source: SourceCoordinates?
            skipWhitespace()
            guard take(UInt8(ascii: "{")) else { return nil }
            repeat {
                skipWhitespace()
                guard let keyBytes = plainString(), let member = Member(keyBytes), seen & member.rawValue == 0 else { return nil }
                seen |= member.rawValue
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                switch member {
                case .v:
                    guard integer() == 1 else { return nil }
                case .type:
                    guard let type = plainString(), Self.equal(type, "intent") else { return nil }
                case .id:
                    guard let value = plainString() else { return nil }
                    id = Self.string(value)
                case .userId:
                    guard let value = plainString() else { return nil }
                    userId = Self.string(value)
                case .notification:
                    guard let value = plainString() else { return nil }
                    notification = Self.string(value)
                case .category:
                    guard let value = plainString() else { return nil }
                    category = Self.string(value)
                case .data:
                    guard let object = freeFormData() else { return nil }
                    data = object
                case .expiresAt:
                    if takeNull() {
                        expiresAt = nil
                    } else {
                        guard let text = plainString(), let time = Timestamp(rfc3339: Self.string(text)) else { return nil }
                        expiresAt = time
                    }
                case .source:
                    guard let coordinates = coordinates() else { return nil }
                    source = coordinates
                }
                skipWhitespace()
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
            skipWhitespace()
            guard index == bytes.count, seen & Member.required == Member.required, let source else { return nil }
            return Intent(
                id: id, userId: userId, notification: notification, category: category, data: data, expiresAt: expiresAt,
                source: source)
        }

        /// `{"topic": …, "partition": …, "offset": …}`, each once, in any order.
        private mutating func coordinates() -> SourceCoordinates? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var topic: String?, partition: Int64?, offset: Int64?
            repeat {
                skipWhitespace()
                guard let key = plainString() else { return nil }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                if Self.equal(key, "topic"), topic == nil {
                    guard let value = plainString() else { return nil }
                    topic = Self.string(value)
                } else if Self.equal(key, "partition"), partition == nil {
                    guard let value = integer() else { return nil }
                    partition = value
                } else if Self.equal(key, "offset"), offset == nil {
                    guard let value = integer() else { return nil }
                    offset = value
                } else {
                    return nil
                }
                skipWhitespace()
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")), let topic, let partition, let partitionNumber = Int32(exactly: partition), let offset
            else { return nil }
            return SourceCoordinates(topic: topic, partition: partitionNumber, offset: offset)
        }

        /// The free-form `data` object, through the tree as the tree path reads it, with the
        /// same size limits (a violation gives nil: the tree path reports it).
        private mutating func freeFormData() -> JSONObject? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "{"), let end = endOfObject(from: index) else { return nil }
            let slice = UnsafeBufferPointer(rebasing: bytes[index..<end])
            index = end
            guard let node = try? JSONReader.read(slice, dialect: .foundationCompatible),
                  (try? RecordLimits.standard.checkFields(.object([(key: "data", value: node)]))) != nil
            else { return nil }
            return try? JSONValue.object(node: node, path: .root)
        }

        /// The index after the object that starts at `start`, found by counting brackets
        /// outside strings; nil if the text ends first. Whether it is valid JSON is for the
        /// reader to say.
        private func endOfObject(from start: Int) -> Int? {
            var depth = 0
            var position = start
            var inString = false
            while position < bytes.count {
                let byte = bytes[position]
                if inString {
                    if byte == UInt8(ascii: "\\") {
                        position += 1
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                } else {
                    switch byte {
                    case UInt8(ascii: "\""): inString = true
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 { return position + 1 }
                    default: break
                    }
                }
                position += 1
            }
            return nil
        }

        /// A string of printable ASCII without escapes, no longer than any field's size limit
        /// (`RecordLimits.shortestString`), without its quotes; nil for any other value.
        private mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    guard index - start <= RecordLimits.shortestString else { return nil }
                    let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    return text
                }
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }

        /// An integer written plainly: an optional minus, no leading zero, at most 18 digits
        /// (within `Int64` without a check), followed by a delimiter; nil for any other number.
        private mutating func integer() -> Int64? {
            let negative = take(UInt8(ascii: "-"))
            let start = index
            var value: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits <= 18, digits == 1 || bytes[start] != UInt8(ascii: "0"), !(negative && value == 0) else {
                return nil
            }
            if index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), 0x20, 0x0A, 0x0D, 0x09: break
                default: return nil  // a fraction, an exponent, or not a number
                }
            }
            return negative ? -value : value
        }

        private mutating func takeNull() -> Bool {
            guard bytes.count - index >= 4, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
                  bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
            else { return false }
            index += 4
            return true
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
            bytes.elementsEqual(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
        }

        /// Printable ASCII only (`plainString`), so no validation is needed.
        static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
            String(decoding: bytes, as: UTF8.self)
        }
    }
}
