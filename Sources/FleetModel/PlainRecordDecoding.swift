// The records a delivery worker reads most, read straight from their bytes, without building a
// tree of the whole record: intents, and the app's events (`app.opened`, `user.signed_up`,
// `notification.opened`, `notification.dismissed`).
//
// Why: reading a record went through the whole-record tree (`JSONReader`), the size check on the
// tree (`RecordLimits`), the tree's release and, for the events, `Decodable`: for intents about
// 7 % of a busy worker's CPU, and an event cost as much as an intent. An intent's free-form
// `data` is read from the bytes too when it is plain (`Scanner.plainFreeForm`), else through the
// tree.
//
// Only the plain case is read here: the members the record's type has, each once, strings
// without escapes or non-ASCII bytes and short enough that no size limit can apply, numbers as
// plain integers. Anything else gives nil, and the record goes through `RecordCodec`'s tree
// path, which accepts or refuses it with its own errors, so this path never decides an error.
// Where it gives a record it must be exactly the tree path's: `RecordCodecDifferentialTests`
// checks both against `JSONDecoder` on random, mutated and spaced-out records, and
// `PlainRecordDecodingTests` that the plain cases are taken here and the unusual ones are not.

import Foundation

enum PlainRecordDecoding {
    /// The record in `bytes`, when it is one of the types read here, written plainly; nil otherwise.
    static func record(_ bytes: UnsafeBufferPointer<UInt8>) -> FleetRecord? {
        var scanner = Scanner(bytes: bytes)
        // Filled in place: returned as an optional, the members (some 300 bytes) were copied
        // four times a record.
        var members = Members()
        guard scanner.topLevel(into: &members) else { return nil }
        return members.record(in: bytes)
    }

    /// Free-form data (`intent.data`) in `bytes`, when it is written plainly; nil otherwise
    /// (see `Scanner.plainFreeForm`).
    static func plainFreeForm(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONObject? {
        Scanner.plainFreeForm(bytes)
    }

    /// Whether `word`'s eight bytes are all printable ASCII other than `"` and `\`, the bytes
    /// `plainString` takes (see `Scanner.stops`).
    static func isPlainWord(_ word: UInt64) -> Bool {
        Scanner.stops(word) == 0
    }

    /// The place of the first byte of `word` that `plainString` does not take, bytes in memory
    /// order; nil if it takes all eight (see `Scanner.stops`).
    static func firstStop(in word: UInt64) -> Int? {
        let stops = Scanner.stops(UInt64(littleEndian: word))
        return stops == 0 ? nil : stops.trailingZeroBitCount / 8
    }

    /// A member's value, as far as the plain case goes.
    private enum Value {
        case string(UnsafeBufferPointer<UInt8>)
        case integer(Int64)
        case null
    }

    /// The names a plain record's members may have, as bits.
    private enum Member: UInt16 {
        case v = 0x1, type = 0x2, id = 0x4, userId = 0x8, notification = 0x10, category = 0x20, data = 0x40
        case expiresAt = 0x80, source = 0x100, entrySource = 0x200, notificationId = 0x400, timeZone = 0x800

        init?(_ key: UnsafeBufferPointer<UInt8>) {
            switch key.count {
            case 1 where key[0] == UInt8(ascii: "v"): self = .v
            case 2 where Scanner.equal(key, "id"): self = .id
            case 4 where Scanner.equal(key, "type"): self = .type
            case 4 where Scanner.equal(key, "data"): self = .data
            case 6 where Scanner.equal(key, "source"): self = .source
            case 7 where Scanner.equal(key, "user_id"): self = .userId
            case 8 where Scanner.equal(key, "category"): self = .category
            case 9 where Scanner.equal(key, "time_zone"): self = .timeZone
            case 10 where Scanner.equal(key, "expires_at"): self = .expiresAt
            case 12 where Scanner.equal(key, "notification"): self = .notification
            case 12 where Scanner.equal(key, "entry_source"): self = .entrySource
            case 15 where Scanner.equal(key, "notification_id"): self = .notificationId
            default: return nil
            }
        }
    }

    /// The members a record type has: all of `required`, and any of the optional ones.
    private struct Shape {
        let required: UInt16
        let allowed: UInt16

        init(_ required: [Member], optional: [Member] = []) {
            self.required = required.reduce(0) { $0 | $1.rawValue }
            self.allowed = optional.reduce(self.required) { $0 | $1.rawValue }
        }

        static let intent = Shape([.v, .type, .id, .userId, .notification, .category, .data, .source], optional: [.expiresAt])
        static let appOpened = Shape([.v, .type, .id, .userId, .entrySource], optional: [.notificationId])
        static let userSignedUp = Shape([.v, .type, .id, .userId, .timeZone])
        static let notificationInteraction = Shape([.v, .type, .id, .userId, .notificationId, .category])
    }

    /// The top-level members of a plain record, each once.
    private struct Members {
        var present: UInt16 = 0
        var v, type, id, userId, notification, category, expiresAt, entrySource, notificationId, timeZone: Value?
        /// The two objects, read where they lie (`Scanner.topLevel`): `data` when it is plain,
        /// else its bytes (braces included) for the tree; `source` as coordinates.
        var plainData: JSONObject?
        var treeData: Range<Int>?
        var coordinates: SourceCoordinates?

        /// Marks `member` present; false for a member already seen.
        mutating func take(_ member: Member) -> Bool {
            guard present & member.rawValue == 0 else { return false }
            present |= member.rawValue
            return true
        }

        /// Keeps `value` for `member`, one with a plain value (the objects are kept by `topLevel`).
        mutating func store(_ member: Member, _ value: Value) {
            switch member {
            case .v: v = value
            case .type: type = value
            case .id: id = value
            case .userId: userId = value
            case .notification: notification = value
            case .category: category = value
            case .data, .source: break
            case .expiresAt: expiresAt = value
            case .entrySource: entrySource = value
            case .notificationId: notificationId = value
            case .timeZone: timeZone = value
            }
        }

        /// Whether the members present are `shape`'s required ones, plus any of its optional ones.
        func has(_ shape: Shape) -> Bool {
            present & shape.required == shape.required && present & ~shape.allowed == 0
        }

        func record(in bytes: UnsafeBufferPointer<UInt8>) -> FleetRecord? {
            guard case .integer(1)? = v, case .string(let typeName)? = type, let id = Self.text(id), let userId = Self.text(userId)
            else { return nil }
            if Scanner.equal(typeName, "intent") {
                guard has(.intent),
                      let notification = Self.text(notification), let category = Self.text(category),
                      let data = plainData ?? treeData.flatMap({ Scanner.treeFreeForm(UnsafeBufferPointer(rebasing: bytes[$0])) }),
                      let source = coordinates
                else { return nil }
                var expires: Timestamp?
                switch expiresAt {
                case nil, .null?: expires = nil
                case .string(let text)?:
                    guard let time = Timestamp(rfc3339: Scanner.string(text)) else { return nil }
                    expires = time
                default: return nil
                }
                return .intent(Intent(
                    id: id, userId: userId, notification: notification, category: category, data: data, expiresAt: expires,
                    source: source))
            }
            if Scanner.equal(typeName, "app.opened") {
                guard has(.appOpened),
                      let entry = Self.text(entrySource).flatMap(EntrySource.init(rawValue:))
                else { return nil }
                var notificationId: String?
                switch self.notificationId {
                case nil, .null?: notificationId = nil
                case .string(let text)?: notificationId = Scanner.string(text)
                default: return nil
                }
                return .appOpened(AppOpened(id: id, userId: userId, entrySource: entry, notificationId: notificationId))
            }
            if Scanner.equal(typeName, "user.signed_up") {
                guard has(.userSignedUp), let zone = Self.text(timeZone).flatMap(Zone.init(identifier:))
                else { return nil }
                return .userSignedUp(UserSignedUp(id: id, userId: userId, timeZone: zone))
            }
            let opened = Scanner.equal(typeName, "notification.opened")
            if opened || Scanner.equal(typeName, "notification.dismissed") {
                guard has(.notificationInteraction),
                      let notificationId = Self.text(notificationId), let category = Self.text(category)
                else { return nil }
                let interaction = NotificationInteraction(id: id, userId: userId, notificationId: notificationId, category: category)
                return opened ? .notificationOpened(interaction) : .notificationDismissed(interaction)
            }
            return nil
        }

        /// A string member's text; nil for any other value or none.
        private static func text(_ value: Value?) -> String? {
            guard case .string(let bytes)? = value else { return nil }
            return Scanner.string(bytes)
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        /// `RecordLimits.shortestString`, read once per scanner: a static that is computed is a
        /// lazy global, and reading it cost a `swift_once` call for every string scanned.
        let longestPlainString = RecordLimits.shortestString

        /// `{"name": value, …}` with plain values and known names, each once, and nothing after,
        /// into `members`; false for anything else.
        mutating func topLevel(into members: inout Members) -> Bool {
            skipWhitespace()
            guard take(UInt8(ascii: "{")) else { return false }
            repeat {
                skipWhitespace()
                guard let key = plainString(), let member = Member(key) else { return false }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return false }
                skipWhitespace()
                guard members.take(member) else { return false }
                // The objects of `data` and `source` are read where they lie, in the one pass
                // over the record: skipping them to find their end and then reading them from
                // their start scanned every intent's two objects twice. Data that is not plain is
                // kept by its bytes for the tree. Anything else (a `data` that is not an object, a
                // `source` that is not plain coordinates) makes the whole record the tree's: no
                // record read here has such a member, as before.
                if member == .data {
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return false }
                    let start = index
                    if let object = plainObject(depth: 0) {
                        members.plainData = object
                    } else {
                        guard let end = endOfObject(from: start) else { return false }
                        index = end
                        members.treeData = start..<end
                    }
                } else if member == .source {
                    guard let coordinates = coordinates() else { return false }
                    members.coordinates = coordinates
                } else {
                    guard let value = value() else { return false }
                    members.store(member, value)
                }
                skipWhitespace()
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return false }
            skipWhitespace()
            return index == bytes.count
        }

        private mutating func value() -> Value? {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return plainString().map(Value.string)
            case UInt8(ascii: "n"):
                return takeNull() ? .null : nil
            default:
                return integer().map(Value.integer)
            }
        }

        /// `{"topic": …, "partition": …, "offset": …}` from here, each once, in any order.
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
            guard take(UInt8(ascii: "}")), let topic, let partition,
                  let partitionNumber = Int32(exactly: partition), let offset
            else { return nil }
            return SourceCoordinates(topic: topic, partition: partitionNumber, offset: offset)
        }

        /// A free-form `data` object that is not plain, read through the tree as the tree path
        /// reads it, with the same size limits (a violation gives nil: the tree path reports it).
        static func treeFreeForm(_ data: UnsafeBufferPointer<UInt8>) -> JSONObject? {
            guard let node = try? JSONReader.read(data, dialect: .foundationCompatible),
                  (try? RecordLimits.standard.checkFields(.object([(key: "data", value: node)]))) != nil
            else { return nil }
            return try? JSONValue.object(node: node, path: .root)
        }

        /// `bytes` as a free-form object, when it is plain: member names and strings as
        /// `plainString` reads them, plain integers, `true`, `false`, `null`, lists of those, and
        /// objects of the same kind nested at most `plainDepth` deep; each object with distinct
        /// names, at most `RecordLimits.freeFormMembers` of them, each list no longer than any
        /// list limit. Such data is under every size limit, and reads as the tree reads it. Any
        /// other gives nil, for the tree to read (and to refuse, where it must).
        ///
        /// Why: the tree path read an intent's data three times (the tree, its limits, then the
        /// dictionary), two fifths of reading an intent; `Benchmarks/FoldProfile`: 2.553G →
        /// 2.411G instructions (−5.6 %).
        static func plainFreeForm(_ bytes: UnsafeBufferPointer<UInt8>) -> JSONObject? {
            var scanner = Scanner(bytes: bytes)
            guard let object = scanner.plainObject(depth: 0), scanner.index == bytes.count else { return nil }
            return object
        }

        /// How deep `plainFreeForm` reads nested objects: far within `RecordLimits.maxDepth`.
        static let plainDepth = 4

        private mutating func plainObject(depth: Int) -> JSONObject? {
            guard take(UInt8(ascii: "{")) else { return nil }
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return [:] }
            // Room for three members at once: the data of most intents has one to three, and
            // growing from empty reallocated twice on the way (`Benchmarks/README.md`, "Runtime,
            // tenth round").
            var object = JSONObject(minimumCapacity: 3)
            repeat {
                skipWhitespace()
                guard let key = plainString(), object.count < RecordLimits.freeFormMembers else { return nil }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                // A repeated name is the tree's to read: it keeps the first.
                guard let value = plainValue(depth: depth), object.updateValue(value, forKey: Self.string(key)) == nil else {
                    return nil
                }
                skipWhitespace()
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? object : nil
        }

        private mutating func plainValue(depth: Int) -> JSONValue? {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return plainString().map { .string(Self.string($0)) }
            case UInt8(ascii: "{"):
                guard depth < Self.plainDepth else { return nil }
                return plainObject(depth: depth + 1).map(JSONValue.object)
            case UInt8(ascii: "["):
                return plainList()
            case UInt8(ascii: "t"):
                return takeLiteral("true") ? .bool(true) : nil
            case UInt8(ascii: "f"):
                return takeLiteral("false") ? .bool(false) : nil
            case UInt8(ascii: "n"):
                return takeNull() ? .null : nil
            default:
                return integer().map(JSONValue.int)
            }
        }

        /// A list of plain strings, integers, booleans and nulls, no longer than any list limit
        /// (`RecordLimits.shortestList`).
        private mutating func plainList() -> JSONValue? {
            guard take(UInt8(ascii: "[")) else { return nil }
            var elements: [JSONValue] = []
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return .array(elements) }
            elements.reserveCapacity(4)
            repeat {
                skipWhitespace()
                guard index < bytes.count, bytes[index] != UInt8(ascii: "{"), bytes[index] != UInt8(ascii: "["),
                      elements.count < RecordLimits.shortestList, let element = plainValue(depth: Self.plainDepth)
                else { return nil }
                elements.append(element)
                skipWhitespace()
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]")) ? .array(elements) : nil
        }

        private mutating func takeLiteral(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard bytes.count - index >= count,
                  Self.equal(UnsafeBufferPointer(rebasing: bytes[index..<(index + count)]), literal)
            else { return false }
            index += count
            return true
        }

        /// The index after the object that starts at `start`, found by counting brackets
        /// outside strings; nil if the text ends first. Whether it is valid JSON is for the
        /// member's own reading to say.
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
            // Eight bytes at a time: past a word of plain bytes (most of an id or a name; no bit
            // set, so 64 trailing zeros, eight bytes), or straight to the first byte of a word
            // that is not plain, which the loop below takes as the closing quote or refuses. Only
            // the last seven bytes of the record are scanned byte by byte.
            let raw = UnsafeRawBufferPointer(bytes)
            while index &+ 8 <= bytes.count {
                let stops = Self.stops(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                index &+= stops.trailingZeroBitCount &>> 3
                if stops != 0 { break }
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    guard index - start <= longestPlainString else { return nil }
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
        /// (within `Int64` without a check), followed by a delimiter (`,`, `}`, `]` or
        /// whitespace); nil for any other number.
        private mutating func integer() -> Int64? {
            let negative = take(UInt8(ascii: "-"))
            let start = index
            var value: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                // Past 18 digits the value is not needed (refused below) and would overflow.
                if index - start < 18 { value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits <= 18, digits == 1 || bytes[start] != UInt8(ascii: "0"), !(negative && value == 0) else {
                return nil
            }
            if index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09: break
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
            let count = literal.utf8CodeUnitCount
            guard bytes.count == count else { return false }
            guard let base = bytes.baseAddress, count > 0 else { return true }
            return memcmp(base, literal.utf8Start, count) == 0
        }

        /// The high bit of each byte of `word` (read little-endian: the first byte lowest) that
        /// `plainString` does not take, with any set bit also set above such a byte (a borrow).
        /// So the lowest bit set, if any, is exactly the first byte not taken: the bytes a JSON
        /// string escapes (`CanonicalJSONSession.escapeStops`), DEL, and bytes from 0x80.
        @inline(__always)
        static func stops(_ word: UInt64) -> UInt64 {
            (word & CanonicalJSONSession.wordHighBits) | CanonicalJSONSession.escapeStops(word)
                | CanonicalJSONSession.matches(0x7F, in: word)
        }

        /// Printable ASCII only (`plainString`), so no validation is needed.
        static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
            String(decoding: bytes, as: UTF8.self)
        }
    }
}
