import Foundation

/// A JSON object (an intent's `data`, a section item, an event's properties): its members kept
/// in the order canonical JSON writes them, by the UTF-8 bytes of their names.
///
/// Why not `[String: JSONValue]`: every record the fleet reads or writes carries one of these,
/// and they are small (one to six members). A dictionary hashed each name with SipHash when
/// the object was read and again at every lookup, and every write sorted the names anew;
/// `Benchmarks/README.md`, "Runtime, thirteenth round", has the figures. Kept in writing order,
/// an object read from canonical JSON is built by appending, written without sorting, and
/// searched by comparing a handful of names.
///
/// Names are one name when they are equal `String`s (canonical equivalence, as a dictionary's
/// keys): `"é"` and `"e\u{301}"` are one member, as `JSONEncoder` and `JSONDecoder` see them.
/// The value semantics are a dictionary's: equality ignores the order the members were added in
/// (the storage is in name order either way), a literal with a name twice is a programming
/// error, and updating a member keeps the name it was added with.
public struct JSONObject: Sendable {
    public typealias Element = (key: String, value: JSONValue)

    /// The members, in the byte order of their names' UTF-8; no two names equal.
    private var members: [Element]

    public init() { members = [] }

    public init(minimumCapacity: Int) {
        members = []
        members.reserveCapacity(minimumCapacity)
    }

    /// The object of `pairs`, whose names must be distinct (as `Dictionary(uniqueKeysWithValues:)`).
    public init<Pairs: Sequence>(uniqueKeysWithValues pairs: Pairs) where Pairs.Element == (String, JSONValue) {
        self.init(minimumCapacity: pairs.underestimatedCount)
        for (key, value) in pairs {
            precondition(updateValue(value, forKey: key) == nil, "JSONObject(uniqueKeysWithValues:) given the name \(key.debugDescription) twice")
        }
    }

    public mutating func reserveCapacity(_ minimumCapacity: Int) { members.reserveCapacity(minimumCapacity) }

    /// The member named `key`'s value; assigning nil removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let position = index(forKey: key) else { return nil }
            return members[position].value
        }
        set {
            if let newValue { updateValue(newValue, forKey: key) } else { removeValue(forKey: key) }
        }
    }

    /// Where the member named `key` is, by comparing names: the objects are small, and comparing
    /// two short names is a fraction of hashing one.
    public func index(forKey key: String) -> Int? {
        var position = 0
        while position < members.count {
            if members[position].key == key { return position }
            position += 1
        }
        return nil
    }

    /// Sets the member named `key` and returns its previous value, as `Dictionary.updateValue`.
    @discardableResult
    public mutating func updateValue(_ value: JSONValue, forKey key: String) -> JSONValue? {
        if let position = index(forKey: key) {
            let old = members[position].value
            members[position].value = value
            return old
        }
        let point = insertionPoint(for: key)
        if point == members.count { members.append((key, value)) } else { members.insert((key, value), at: point) }
        return nil
    }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let position = index(forKey: key) else { return nil }
        return members.remove(at: position).value
    }

    /// Replaces the value of the member at `position` (from `index(forKey:)`): for objects built
    /// from one prototype, without looking the name up again.
    public mutating func setValue(_ value: consuming JSONValue, at position: Int) {
        members[position].value = value
    }

    /// The members `isIncluded` keeps, as an object (as `Dictionary.filter`).
    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> JSONObject {
        var kept = self
        kept.members = try members.filter(isIncluded)
        return kept
    }

    public var keys: LazyMapCollection<[Element], String> { members.lazy.map(\.key) }
    public var values: LazyMapCollection<[Element], JSONValue> { members.lazy.map(\.value) }

    /// Where a new name goes: after every name whose bytes precede it. Names read from canonical
    /// JSON come in that order, so this is the end after one comparison.
    private func insertionPoint(for key: String) -> Int {
        guard let last = members.last, !Self.namePrecedes(last.key, key) else { return members.count }
        var low = 0, high = members.count - 1
        while low < high {
            let middle = (low + high) / 2
            if Self.namePrecedes(members[middle].key, key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first eight bytes of `name`'s UTF-8, the first the most significant, zero-filled when
    /// shorter. Names whose prefixes differ are in the order of their prefixes: at the first
    /// byte that differs either both have a byte there, or the name that ended (a zero) is a
    /// prefix of the other, whose byte there is not zero. Equal prefixes say nothing (`"a"` and
    /// `"a\u{0}"`); those names are compared in full. `CanonicalJSONEncoderTests` checks it.
    @inline(__always)
    package static func sortPrefix(_ name: String) -> UInt64 {
        name.withUTF8Bytes { bytes in
            if bytes.count >= 8 { return UInt64(bigEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(as: UInt64.self)) }
            var prefix: UInt64 = 0
            for (place, byte) in bytes.enumerated() { prefix |= UInt64(byte) << (56 - 8 * place) }
            return prefix
        }
    }

    /// `a.utf8.lexicographicallyPrecedes(b.utf8)`: by the eight-byte prefixes, then by `memcmp`
    /// of the two names' bytes when those are equal.
    package static func namePrecedes(_ a: String, _ b: String) -> Bool {
        let (prefixA, prefixB) = (sortPrefix(a), sortPrefix(b))
        return prefixA != prefixB ? prefixA < prefixB : bytesPrecede(a, b)
    }

    /// `namePrecedes` for names with equal prefixes, out of line: rare.
    @inline(never)
    private static func bytesPrecede(_ a: String, _ b: String) -> Bool {
        a.withUTF8Bytes { a in
            b.withUTF8Bytes { b in
                let common = Swift.min(a.count, b.count)
                if common > 0, let left = a.baseAddress, let right = b.baseAddress {
                    let order = memcmp(left, right, common)
                    if order != 0 { return order < 0 }
                }
                return a.count < b.count
            }
        }
    }
}

extension JSONObject: RandomAccessCollection {
    public var startIndex: Int { members.startIndex }
    public var endIndex: Int { members.endIndex }
    public subscript(position: Int) -> Element { members[position] }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(minimumCapacity: elements.count)
        for (key, value) in elements {
            precondition(updateValue(value, forKey: key) == nil, "JSONObject literal contains the name \(key.debugDescription) twice")
        }
    }
}

extension JSONObject: Hashable {
    /// Equal when they have the same names (as `String`s are equal) with equal values, as two
    /// dictionaries are. Both are in name order, so equal objects nearly always match member by
    /// member; only names equal as strings but not as bytes send it to the lookups.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.members.count == rhs.members.count else { return false }
        for position in lhs.members.indices {
            let (left, right) = (lhs.members[position], rhs.members[position])
            guard left.key == right.key else { return lhs.sameMembersByName(as: rhs) }
            guard left.value == right.value else { return false }
        }
        return true
    }

    private func sameMembersByName(as other: JSONObject) -> Bool {
        members.allSatisfy { member in other[member.key].map { $0 == member.value } ?? false }
    }

    /// Independent of the members' order, as a dictionary's hash, so that objects `==` calls
    /// equal hash alike.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for member in members {
            var own = Hasher()
            own.combine(member.key)
            own.combine(member.value)
            combined ^= own.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(combined)
    }
}

extension JSONObject: Codable {
    /// A member's name as a coding key (`JSONValue` decodes its objects with it too).
    struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// As a `[String: JSONValue]` decodes: a keyed container, each name once.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Name.self)
        self.init(minimumCapacity: container.allKeys.count)
        for name in container.allKeys {
            self[name.stringValue] = try container.decode(JSONValue.self, forKey: name)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Name.self)
        for member in members { try container.encode(member.value, forKey: Name(stringValue: member.key)) }
    }
}

extension JSONObject: CustomStringConvertible {
    public var description: String {
        "[" + (members.isEmpty ? ":" : members.map { "\($0.key.debugDescription): \($0.value)" }.joined(separator: ", ")) + "]"
    }
}
