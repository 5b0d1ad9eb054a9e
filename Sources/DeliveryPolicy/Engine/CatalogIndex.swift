/// The prepared catalog by type name: an open-addressing table keyed by the name's FNV-1a hash.
///
/// Why not a `[String: CatalogEntry]`: every intent looks its type up several times (validation,
/// primary type, top pending, section items, cool-down), and `Dictionary` hashes a `String` key
/// with a seeded SipHash, a few hundred instructions for a type name. FNV-1a over the name's
/// UTF-8 bytes and one string comparison cost a fraction of that. The table is built once per
/// profile, at most half full, in name order (the same layout in every process).
struct CatalogIndex: Sendable {
    private let names: [String?]
    private let entries: [CatalogEntry?]
    private let mask: Int

    init(_ catalog: [String: CatalogEntry]) {
        var size = 8
        while size < catalog.count * 2 { size *= 2 }
        var names = [String?](repeating: nil, count: size)
        var entries = [CatalogEntry?](repeating: nil, count: size)
        for (name, entry) in catalog.sorted(by: { $0.key < $1.key }) {
            var slot = Self.home(of: name, mask: size - 1)
            while names[slot] != nil { slot = (slot + 1) & (size - 1) }
            names[slot] = name
            entries[slot] = entry
        }
        self.names = names
        self.entries = entries
        self.mask = size - 1
    }

    subscript(name: String) -> CatalogEntry? {
        var slot = Self.home(of: name, mask: mask)
        while let candidate = names[slot] {
            if candidate == name { return entries[slot] }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Where probing for `name` starts.
    ///
    /// Why not FNV-1a over every byte: the catalog is looked up several times per intent, and
    /// the byte loop was most of a lookup's cost. Type names are short and differ in their
    /// first or last eight bytes ("contacts.dedup_ready", "contacts.enrichment"), so those two
    /// words and the length, multiplied to spread them, place them as well. The hash never
    /// leaves this process (the table is rebuilt from the profile), and a collision only costs
    /// a probe: every candidate is compared by name.
    private static func home(of name: String, mask: Int) -> Int {
        let hash = name.withUTF8Bytes { bytes -> UInt64 in
            let raw = UnsafeRawBufferPointer(bytes)
            guard raw.count >= 8 else { return IdempotencyMemory.hash(bytes) }
            let head = raw.loadUnaligned(as: UInt64.self)
            let tail = raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self)
            return (head ^ (tail &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(raw.count)) &* 0xC2B2_AE3D_27D4_EB4F
        }
        return Int(truncatingIfNeeded: hash ^ (hash >> 29)) & mask
    }
}
