import Foundation

/// The state of one `CanonicalJSONEncoder` run: the output bytes and a stack of the values
/// being encoded (frames). See `CanonicalJSONEncoder` for the design.
///
/// Every value encoded through `encode(to:)` gets a frame; its encoder and containers name the
/// frame by depth and serial, so a container used after its value finished is noticed. An
/// object's members are written as they come (`,"key":value`), each noted as an `Entry`; when
/// the object's frame closes they are reordered by key. Containers that may be written after
/// later siblings (`nestedContainer`, `superEncoder`) get a child session, spliced in when the
/// enclosing frame closes.
///
/// The stored properties are `@exclusivity(unchecked)`: the session is only reached from the
/// encoding call that owns it, never shared, and the dynamic exclusivity check on every access
/// of a class property cost more than the writing itself.
final class CanonicalJSONSession {
    /// Thrown (or flagged, where the protocol cannot throw) when `JSONEncoder` would do
    /// something this writer does not reproduce in place; the value is then encoded again with
    /// `JSONEncoder`.
    struct NeedsFoundation: Error {}

    enum Kind: UInt8 { case empty, single, object, array }

    struct Frame {
        var kind: Kind
        /// Offset of the frame's value in `bytes`.
        var start: Int
        /// Index in `entries` of the frame's first member (objects) or deferred element (arrays).
        var firstEntry: Int
        /// Elements written so far (arrays): where commas go, and the index in coding paths.
        var count: Int
        var serial: UInt32
        /// A member's key needed escaping: order by the unescaped key.
        var escapedKeys: Bool
        /// A member's key has non-ASCII bytes: keys different in bytes may be equal as `String`s.
        var nonASCIIKeys: Bool
        /// The key or index this frame's value was encoded under (for `codingPath`).
        var path: PathComponent
    }

    enum PathComponent {
        case none
        case key(String, Int?)
        case index(Int)

        var codingKey: (any CodingKey)? {
            switch self {
            case .none: nil
            case .key(let s, let i): CanonicalJSONPathKey(stringValue: s, intValue: i)
            case .index(let i): CanonicalJSONPathKey(stringValue: "Index \(i)", intValue: i)
            }
        }
    }

    /// An object member (`,"key":value`) or an array element written by a child session.
    struct Entry {
        /// Offset of the key's opening quote (objects) or of the element (arrays).
        var start: Int
        /// Offset just past the key's closing quote (objects).
        var keyEnd: Int
        /// Index in `children`, or -1 when the value is in `bytes`.
        var child: Int32
        /// The child is a `superEncoder`'s, whose value `JSONEncoder` stores when the encoder is
        /// released: in conflict with a direct write of the same key the order is not ours.
        var isSuper: Bool
    }

    @exclusivity(unchecked) var bytes: JSONOutputBuffer
    @exclusivity(unchecked) var frames: [Frame] = []
    @exclusivity(unchecked) var entries: [Entry] = []
    @exclusivity(unchecked) var children: [CanonicalJSONSession] = []
    /// Reused by every object that needs reordering.
    @exclusivity(unchecked) var scratch: [UInt8] = []
    @exclusivity(unchecked) var order: [Int] = []
    @exclusivity(unchecked) var nextSerial: UInt32 = 0
    /// Set where the protocol cannot throw `NeedsFoundation`; checked at the end.
    @exclusivity(unchecked) var needsFoundation = false
    /// The coding path to this session's root (child sessions).
    let basePath: [any CodingKey]

    /// `capacity`: room for a typical value, so that most never grow the buffer.
    init(capacity: Int = 512, basePath: [any CodingKey] = []) {
        self.bytes = JSONOutputBuffer(capacity: capacity)
        self.basePath = basePath
    }

    /// Empties the session for the next value, keeping the capacity of its buffer and lists.
    func reset() {
        bytes.removeSuffix(from: 0)
        frames.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        children.removeAll()
        needsFoundation = false
    }

    // MARK: Frames

    func encodeTopLevel<T: Encodable>(_ value: T) throws {
        if try writeDirect(value) { return }
        if T.self == FleetRecord.self, try writeRecordDirectly(Self.cast(value, to: FleetRecord.self)) { return }
        pushFrame(.none)
        try value.encode(to: CanonicalJSONValueEncoder(session: self, depth: 0))
        if frames[0].kind == .empty {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        try closeFrame()
    }

    /// Encodes a value nested in the current frame (a member, an element or a single value).
    @inline(__always)
    func encodeNested<T: Encodable>(_ value: T, path: PathComponent) throws {
        if try writeDirect(value) { return }
        pushFrame(path)
        try value.encode(to: CanonicalJSONValueEncoder(session: self, depth: frames.count - 1))
        if frames[frames.count - 1].kind == .empty { bytes.append("{}") }
        try closeFrame()
    }

    @inline(__always)
    func pushFrame(_ path: PathComponent) {
        // Reserved on first use, not in `init`: the records written directly
        // (`writeRecordDirectly`) without a free-form object (decisions, deliveries) never push
        // a frame, and allocated and freed both lists for nothing (`Benchmarks/FoldProfile`:
        // 2.825G → 2.776G instructions, −1.7 %).
        if frames.capacity == 0 {
            frames.reserveCapacity(8)
            entries.reserveCapacity(32)
        }
        nextSerial &+= 1
        frames.append(Frame(
            kind: .empty, start: bytes.count, firstEntry: entries.count, count: 0, serial: nextSerial,
            escapedKeys: false, nonASCIIKeys: false, path: path))
    }

    /// Whether the frame at `depth` with `serial` is the one being written; containers check
    /// this before every write.
    @inline(__always)
    func isCurrent(_ depth: Int, _ serial: UInt32) -> Bool {
        depth == frames.count - 1 && frames[depth].serial == serial
    }

    @inline(__always)
    func requireCurrent(_ depth: Int, _ serial: UInt32) throws {
        if !isCurrent(depth, serial) { throw NeedsFoundation() }
    }

    /// Turns the current (empty or same-kind) frame into an object or array.
    /// Returns false when `JSONEncoder` would merge or refuse (the frame already holds another
    /// kind of value).
    func open(_ kind: Kind, depth: Int) -> Bool {
        guard depth == frames.count - 1 else { return false }
        switch frames[depth].kind {
        case .empty:
            frames[depth].kind = kind
            frames[depth].firstEntry = entries.count
            bytes.append(kind == .object ? .openBrace : .openBracket)
            return true
        case let existing:
            return existing == kind
        }
    }

    /// Finishes the current frame: orders an object's members, splices child sessions, closes
    /// brackets, and pops it.
    func closeFrame() throws {
        let depth = frames.count - 1
        let frame = frames[depth]
        switch frame.kind {
        case .empty, .single:
            break
        case .object:
            try closeObject(frame)
            bytes.append(.closeBrace)
        case .array:
            if entries.count > frame.firstEntry { try spliceArrayChildren(frame) }
            bytes.append(.closeBracket)
        }
        if entries.count > frame.firstEntry { entries.removeSubrange(frame.firstEntry...) }
        frames.removeLast()
    }

    /// Puts the members `,"key":value` written since `frame.start + 1` in key order (by UTF-8
    /// bytes, later writes of a key winning), with child sessions' values spliced in.
    private func closeObject(_ frame: Frame) throws {
        let first = frame.firstEntry, end = entries.count
        let count = end - first
        if count == 0 { return }
        var needsRewrite = false
        for i in first..<end where entries[i].child >= 0 { needsRewrite = true; break }
        if count == 1 && !needsRewrite { return }
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: first..<end)

        if frame.escapedKeys {
            let keys = (first..<end).map { unescapedKey(entries[$0]) }
            order.sort { a, b in
                let ka = keys[a - first], kb = keys[b - first]
                return ka.lexicographicallyPrecedes(kb) || (ka == kb && a < b)
            }
        } else {
            bytes.withUnsafeBufferPointer { buffer in
                let base = buffer.baseAddress!
                entries.withUnsafeBufferPointer { entries in
                    func less(_ a: Int, _ b: Int) -> Bool {
                        let ea = entries[a], eb = entries[b]
                        // The key without its quotes (the closing one would sort "" after " ").
                        let la = ea.keyEnd - ea.start - 2, lb = eb.keyEnd - eb.start - 2
                        let c = memcmp(base + ea.start + 1, base + eb.start + 1, min(la, lb))
                        if c != 0 { return c < 0 }
                        if la != lb { return la < lb }
                        return a < b
                    }
                    // Members mostly come in a fixed order: insertion sort, then a check.
                    if count <= 16 {
                        for i in 1..<order.count {
                            let x = order[i]
                            var j = i
                            while j > 0 && less(x, order[j - 1]) { order[j] = order[j - 1]; j -= 1 }
                            order[j] = x
                        }
                    } else {
                        order.sort(by: less)
                    }
                }
            }
        }

        // Of equal keys (adjacent now, in writing order) the last written wins.
        var kept: [Int] = []
        kept.reserveCapacity(count)
        var previous = -1
        for index in order {
            if previous >= 0 && sameKey(entries[previous], entries[index], escaped: frame.escapedKeys) {
                if entries[previous].isSuper || entries[index].isSuper { throw NeedsFoundation() }
                kept[kept.count - 1] = index
                needsRewrite = true
            } else {
                kept.append(index)
            }
            previous = index
        }
        if frame.nonASCIIKeys && kept.count > 1 {
            // `JSONEncoder` keeps members in a `[String: …]`, where canonically equivalent keys
            // are one key.
            let distinct = Set(kept.map { String(decoding: unescapedKey(entries[$0]), as: UTF8.self) })
            if distinct.count != kept.count { throw NeedsFoundation() }
        }
        if !needsRewrite {
            for (position, index) in kept.enumerated() where index != first + position { needsRewrite = true; break }
        }
        if !needsRewrite { return }

        // Segment i runs from its key to the comma before the next member (or the end).
        let contentStart = frame.start + 1
        let contentEnd = bytes.count
        scratch.removeAll(keepingCapacity: true)
        bytes.withUnsafeBufferPointer { scratch.append(contentsOf: UnsafeBufferPointer(rebasing: $0[contentStart..<contentEnd])) }
        bytes.removeSuffix(from: contentStart)
        for (position, index) in kept.enumerated() {
            if position > 0 { bytes.append(.comma) }
            let entry = entries[index]
            let segmentEnd = index + 1 < end ? entries[index + 1].start - 1 : contentEnd
            bytes.append(contentsOf: scratch[(entry.start - contentStart)..<(segmentEnd - contentStart)])
            if entry.child >= 0 { try appendChild(Int(entry.child)) }
        }
    }

    private func spliceArrayChildren(_ frame: Frame) throws {
        let contentStart = frame.start + 1
        let contentEnd = bytes.count
        scratch.removeAll(keepingCapacity: true)
        bytes.withUnsafeBufferPointer { scratch.append(contentsOf: UnsafeBufferPointer(rebasing: $0[contentStart..<contentEnd])) }
        bytes.removeSuffix(from: contentStart)
        var copied = contentStart
        for i in frame.firstEntry..<entries.count {
            let entry = entries[i]
            bytes.append(contentsOf: scratch[(copied - contentStart)..<(entry.start - contentStart)])
            copied = entry.start
            try appendChild(Int(entry.child))
        }
        bytes.append(contentsOf: scratch[(copied - contentStart)...])
    }

    private func appendChild(_ index: Int) throws {
        let child = children[index]
        try child.finishAsChild()
        if child.needsFoundation { throw NeedsFoundation() }
        child.bytes.withUnsafeBufferPointer { bytes.append(contentsOf: $0) }
    }

    /// Closes a child session's root (a nested container's object or array, or a super
    /// encoder's value; `{}` when nothing was encoded, as `JSONEncoder` writes it).
    func finishAsChild() throws {
        guard frames.count == 1 else { throw NeedsFoundation() }
        if frames[0].kind == .empty { bytes.append("{}") }
        try closeFrame()
    }

    private func sameKey(_ a: Entry, _ b: Entry, escaped: Bool) -> Bool {
        let la = a.keyEnd - a.start
        guard la == b.keyEnd - b.start else { return false }
        return bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + a.start, $0.baseAddress! + b.start, la) == 0 }
    }

    /// The raw UTF-8 of an entry's key, undoing `writeString`'s escapes.
    private func unescapedKey(_ entry: Entry) -> [UInt8] {
        var result: [UInt8] = []
        var i = entry.start + 1
        let end = entry.keyEnd - 1
        while i < end {
            let byte = bytes[i]
            if byte != .backslash { result.append(byte); i += 1; continue }
            let escape = bytes[i + 1]
            switch escape {
            case UInt8(ascii: "b"): result.append(0x08); i += 2
            case UInt8(ascii: "f"): result.append(0x0C); i += 2
            case UInt8(ascii: "n"): result.append(0x0A); i += 2
            case UInt8(ascii: "r"): result.append(0x0D); i += 2
            case UInt8(ascii: "t"): result.append(0x09); i += 2
            case UInt8(ascii: "u"):
                result.append(Self.hexValue(bytes[i + 4]) << 4 | Self.hexValue(bytes[i + 5])); i += 6
            default: result.append(escape); i += 2
            }
        }
        return result
    }

    private static func hexValue(_ digit: UInt8) -> UInt8 {
        digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10
    }

    // MARK: Members and elements

    /// Starts a member of the object at `depth`: comma, entry, `"key":`.
    @inline(__always)
    func beginMember(_ key: String, depth: Int, child: Int32 = -1, isSuper: Bool = false) {
        if entries.count > frames[depth].firstEntry { bytes.append(.comma) }
        let start = bytes.count
        let flags = writeString(key)
        if flags & Self.escapedFlag != 0 { frames[depth].escapedKeys = true }
        if flags & Self.nonASCIIFlag != 0 { frames[depth].nonASCIIKeys = true }
        entries.append(Entry(start: start, keyEnd: bytes.count, child: child, isSuper: isSuper))
        bytes.append(.colon)
    }

    /// Starts an element of the array at `depth`; returns its index.
    @inline(__always)
    func beginElement(depth: Int) -> Int {
        let index = frames[depth].count
        if index > 0 { bytes.append(.comma) }
        frames[depth].count = index + 1
        return index
    }

    /// A child session for a container that may be written out of order, noted as the value
    /// of the member or element just begun.
    func makeChild(root kind: Kind, path: [any CodingKey]) -> CanonicalJSONSession {
        let child = CanonicalJSONSession(capacity: 64, basePath: path)
        child.pushFrame(.none)
        if kind != .empty { _ = child.open(kind, depth: 0) }
        children.append(child)
        return child
    }

    /// The member of the object at `depth` named `key` that is a child session's, for
    /// `JSONEncoder`'s reuse of a nested container asked for twice; `nil` when there is none,
    /// and `NeedsFoundation` when the key already holds a value written here.
    func existingChild(named key: String, depth: Int) throws -> CanonicalJSONSession? {
        let first = frames[depth].firstEntry
        guard entries.count > first else { return nil }
        let mark = bytes.count
        _ = writeString(key)
        let written = bytes.array(mark..<bytes.count)
        bytes.removeSuffix(from: mark)
        var found: CanonicalJSONSession?
        for i in first..<entries.count {
            let entry = entries[i]
            guard entry.keyEnd - entry.start == written.count, bytes.array(entry.start..<entry.keyEnd) == written else { continue }
            if entry.child >= 0 && !entry.isSuper { found = children[Int(entry.child)] } else { throw NeedsFoundation() }
        }
        return found
    }

    func codingPath(depth: Int) -> [any CodingKey] {
        var path = basePath
        for frame in frames[...depth] {
            if let key = frame.path.codingKey { path.append(key) }
        }
        return path
    }
}

/// A coding path component rebuilt from the key's string and integer values.
struct CanonicalJSONPathKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String, intValue: Int?) { self.stringValue = stringValue; self.intValue = intValue }
    init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    init(intValue: Int) { self.stringValue = "\(intValue)"; self.intValue = intValue }
}

extension UInt8 {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
}
