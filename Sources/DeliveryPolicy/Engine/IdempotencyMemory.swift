import DequeModule
import Foundation
import FleetModel
import StateImages

/// The input ids a user's state has seen recently (P-IDEM-1), oldest first.
///
/// Why a bounded window is enough: a second copy of an input only reaches the inbox when a
/// producer (an upstream worker, the delivery ingest) re-sends its uncommitted tail after a
/// failure, and it can only re-send what its own input topic still retains. Keeping ids for
/// the profile's `idempotency.remember_days` (rin: 7, Kafka's default retention) therefore
/// covers every copy that can exist. Crash recovery and replay of the inbox itself need no
/// memory at all: they restart from the state recorded at that input offset, which holds
/// exactly the ids decided before it.
///
/// Ids are kept as 64-bit FNV-1a hashes with the minute they were seen: 12 bytes each instead
/// of the ~30-byte id. Two distinct ids of one user colliding within a week has probability
/// about n²/2⁶⁵ (n = ids per user per week: 10⁻¹³ at n = 1 000), which would drop one input.
struct IdempotencyMemory: Hashable, Sendable {
    private(set) var entries: Deque<Entry> = []

    struct Entry: Hashable, Sendable {
        var hash: UInt64
        var minute: UInt32  // minutes since the epoch
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Whether the id whose `hash(_:)` is `h` was seen. By hash: the engine hashes an input's
    /// id once, for this check and for `remember(hash:at:)`.
    func contains(hash h: UInt64) -> Bool {
        entries.contains { $0.hash == h }
    }

    /// Remembers the id whose `hash(_:)` is `h`; beyond `capacity` ids the oldest is forgotten, so a user's state stays
    /// bounded (`RecordLimits`) whatever a producer floods it with. The delivery engine refuses
    /// non-security intents well before (`DeliveryEngine.Capacity`), so only security intents
    /// and activity records of a flooded user can push out the oldest ids.
    mutating func remember(hash h: UInt64, at time: Timestamp) {
        // Most users hold a handful of ids: growing a fresh memory one doubling at a time
        // reallocated it at the first, second and third id.
        if entries.isEmpty { entries.reserveCapacity(4) }
        entries.append(Entry(hash: h, minute: Self.minute(time)))
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
    }

    /// The most ids one user's memory holds: 4 096 × 12 bytes, 64 KiB as base64.
    static let capacity = 4_096

    /// Forgets ids seen before `cutoff`.
    mutating func forget(before cutoff: Timestamp) {
        let limit = Self.minute(cutoff)
        while let first = entries.first, first.minute < limit { entries.removeFirst() }
    }

    /// The time the oldest id will be forgotten, given the window.
    func oldest() -> Timestamp? {
        entries.first.map { Timestamp(millisecondsSinceEpoch: Int64($0.minute) * 60_000) }
    }

    static func minute(_ t: Timestamp) -> UInt32 {
        UInt32(clamping: max(0, t.millisecondsSinceEpoch / 60_000))
    }

    /// FNV-1a, 64 bit: stable across processes and platforms (unlike `Hasher`).
    ///
    /// Reads the UTF-8 bytes as one contiguous buffer (`String.withUTF8Bytes`): the `utf8` view's
    /// iterator costs several times more per byte, and rendered bodies are hashed for every
    /// delivery (P-DUP-1). Same bytes, same hash.
    static func hash(_ text: String) -> UInt64 {
        text.withUTF8Bytes { hash($0) }
    }

    /// FNV-1a, 64 bit, of `bytes` (as `hash(_:)` of the string they encode).
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h ^= UInt64(byte)
            h = h &* 0x0000_0100_0000_01b3
        }
        return h
    }
}

extension IdempotencyMemory {
    /// 12 bytes per id, oldest first: the hash (8 bytes) and the minute (4 bytes), little-endian.
    /// The JSON image holds them as base64; the binary image as they are.
    func packed() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * 12)
        for entry in entries {
            for k in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: entry.hash >> (8 * UInt64(k)))) }
            for k in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: entry.minute >> (8 * UInt32(k)))) }
        }
        return bytes
    }

    /// `packed()` written into a state image's field as it is being written.
    func writePacked(into writer: inout ProtobufWireWriter) {
        // Stored in one run: appended a value at a time, the ~15 ids of a typical memory took
        // 30 generic appends, ~110 instructions each (`Benchmarks/README.md`, "Runtime,
        // fourteenth round").
        writer.appendRaw(count: entries.count * 12) { raw in
            var offset = 0
            for entry in entries {
                raw.storeBytes(of: entry.hash.littleEndian, toByteOffset: offset, as: UInt64.self)
                raw.storeBytes(of: entry.minute.littleEndian, toByteOffset: offset + 8, as: UInt32.self)
                offset += 12
            }
        }
    }

    /// Reads `packed()`; refuses a length that is not a whole number of ids, or more ids than
    /// a memory ever holds.
    init(packed bytes: [UInt8]) throws(StateImageError) {
        guard bytes.count % 12 == 0 else {
            throw StateImageError("idempotency memory: \(bytes.count) bytes is not a whole number of 12-byte ids")
        }
        guard bytes.count / 12 <= Self.capacity else {
            throw StateImageError("idempotency memory: \(bytes.count / 12) ids, more than the \(Self.capacity) it holds")
        }
        var entries: Deque<Entry> = []
        entries.reserveCapacity(bytes.count / 12)
        var i = 0
        while i < bytes.count {
            var h: UInt64 = 0
            for k in 0..<8 { h |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
            var m: UInt32 = 0
            for k in 0..<4 { m |= UInt32(bytes[i + 8 + k]) << (8 * UInt32(k)) }
            entries.append(Entry(hash: h, minute: m))
            i += 12
        }
        self.entries = entries
    }
}

extension IdempotencyMemory: Codable {
    /// Packed as base64 of 12 bytes per id (hash, minute; little-endian).
    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        guard let data = Data(base64Encoded: text), data.count % 12 == 0 else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "idempotency memory is not packed base64")
        }
        self = try Self(packed: [UInt8](data))
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(Data(packed()).base64EncodedString())
    }
}
