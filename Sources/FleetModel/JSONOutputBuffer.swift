/// The bytes a `CanonicalJSONSession` writes, in memory the session alone owns.
///
/// Why not `[UInt8]`: an output record is written a byte or a short run at a time (a quote, a
/// key, a string, a comma), and every `Array.append` on the session's array paid a uniqueness
/// check (a runtime call) and the generic `append(contentsOf:)` path. Here an append is a
/// capacity check and a store: with the record writers' members inlined again, `FoldProfile`'s
/// output encoding went from 647M to 517M instructions (`Benchmarks/README.md`, "Runtime, ninth
/// round"). Noncopyable, so the buffer has exactly one owner and is freed once.
struct JSONOutputBuffer: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toHold: count &+ 1) }
        base[count] = byte
        count &+= 1
    }

    @inline(__always)
    mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        let n = bytes.count
        guard n > 0, let source = bytes.baseAddress else { return }
        if capacity &- count < n { grow(toHold: count &+ n) }
        (base + count).update(from: source, count: n)
        count &+= n
    }

    /// Room for `count` more bytes after the ones written, uninitialised: a writer stores into it
    /// (whole words, past what it will keep, if it reserved room for them) and then counts what
    /// it keeps with `commitTail(_:)`. Nothing reserved counts until then.
    @inline(__always)
    mutating func tail(reserving count: Int) -> UnsafeMutablePointer<UInt8> {
        if capacity &- self.count < count { grow(toHold: self.count &+ count) }
        return base + self.count
    }

    /// Counts `written` bytes stored at `tail(reserving:)` as written; at most the room reserved.
    @inline(__always)
    mutating func commitTail(_ written: Int) {
        assert(written >= 0 && written <= capacity &- count, "committed past the reserved tail")
        count &+= written
    }

    /// Literal text (`true`, `null`, `{}`).
    @inline(__always)
    mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { append(contentsOf: $0) }
    }

    /// Any other bytes (a number's description, a slice of the session's scratch buffer).
    mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { append(contentsOf: $0) }
        if done == nil { for byte in bytes { append(byte) } }
    }

    subscript(index: Int) -> UInt8 {
        @inline(__always) get {
            precondition(index >= 0 && index < count, "JSON output index out of range")
            return base[index]
        }
    }

    /// Drops the bytes from `index` on.
    mutating func removeSuffix(from index: Int) {
        precondition(index >= 0 && index <= count, "JSON output index out of range")
        count = index
    }

    func withUnsafeBufferPointer<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// A copy of the bytes in `range`.
    func array(_ range: Range<Int>) -> [UInt8] {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "JSON output range out of bounds")
        return Array(UnsafeBufferPointer(start: base + range.lowerBound, count: range.count))
    }

    @inline(never)
    private mutating func grow(toHold needed: Int) {
        let newCapacity = Swift.max(needed, capacity &* 2)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        grown.initialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}
