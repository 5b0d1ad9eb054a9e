import Foundation

/// Encodes any `Encodable` to the exact bytes of Foundation's `JSONEncoder` with
/// `outputFormatting = [.sortedKeys, .withoutEscapingSlashes]` and default strategies — the
/// fleet's canonical JSON (`RecordCodec.encode`, processor states in changelogs and history
/// topics) — several times faster.
///
/// Why not `JSONEncoder`: it builds a tree of reference-counted boxes and dictionaries for every
/// value and then serialises it, which made encoding the Kafka runtime's bottleneck. This
/// encoder writes straight into one byte buffer; a keyed container notes where each member
/// starts, and when the value that owns it has finished encoding its members are put in key
/// order in place. Only containers that can be written out of order (`nestedContainer`,
/// `superEncoder`) get a buffer of their own, spliced in when their parent finishes.
///
/// Byte compatibility, conventions as in swift-foundation's `JSONEncoder`/`JSONWriter`:
/// - keys sorted by their UTF-8 bytes; of two writes to the same key the later wins;
/// - strings escape `"`, `\` and control characters (`\b \f \n \r \t`, else `\u00XX`
///   lowercase); `/`, DEL, non-ASCII and U+2028/2029 are written as they are;
/// - integers in decimal; `Double`/`Float` as their `description` with a trailing `.0`
///   removed (`1e+21`, `-0`, `1e-05`); `Decimal` as its `description`;
/// - `Date` as `Date.encode(to:)` writes it (seconds since 2001 as a number), `Data` as base64,
///   `URL` as its absolute string;
/// - a nested value that encodes nothing is `{}`; a top-level one is an error.
///
/// Usage `JSONEncoder` allows but this writer does not reproduce in place (a nested container
/// for a key that already holds a value, a key written through a `superEncoder` and directly,
/// keys that differ in bytes but are equal as Swift strings, a container used after its value
/// finished, NaN or infinity) is detected and the value is encoded again with `JSONEncoder`
/// itself, so the output, or the error, is always `JSONEncoder`'s.
public enum CanonicalJSONEncoder {
    /// The canonical JSON bytes of `value`.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try encode(value, appendingTo: &bytes)
        return bytes
    }

    /// The canonical JSON bytes of `record`: the same bytes as the generic `encode(_:)`.
    ///
    /// Why an overload: the generic path reaches the record writers through a cast of its
    /// generic value, which copies the record (a retain and a release per string and collection
    /// it holds) for every output of every step; here the record is passed on as it is.
    public static func encode(_ record: FleetRecord) throws -> [UInt8] {
        try encode(record, in: CanonicalJSONSession())
    }

    /// `encode(_:)` in `session`, which is emptied first: a caller encoding several records in a
    /// row (`RecordCodec.Writer`) keeps one session and its buffer for all of them.
    static func encode(_ record: FleetRecord, in session: CanonicalJSONSession) throws -> [UInt8] {
        session.reset()
        do {
            if try !session.writeRecordDirectly(record) { try session.encodeTopLevel(record) }
            if !session.needsFoundation { return session.bytes.withUnsafeBufferPointer { Array($0) } }
        } catch is CanonicalJSONSession.NeedsFoundation {
            // Encoded below by `JSONEncoder`.
        }
        return try foundationEncode(record)
    }

    /// Appends the canonical JSON bytes of `value` to `buffer`, so a caller encoding many values
    /// can keep one buffer's capacity. On error `buffer` is left as it was.
    public static func encode<T: Encodable>(_ value: T, appendingTo buffer: inout [UInt8]) throws {
        let session = CanonicalJSONSession()
        do {
            try session.encodeTopLevel(value)
            if !session.needsFoundation {
                session.bytes.withUnsafeBufferPointer { buffer.append(contentsOf: $0) }
                return
            }
        } catch is CanonicalJSONSession.NeedsFoundation {
            // Encoded below by `JSONEncoder`.
        }
        buffer.append(contentsOf: try foundationEncode(value))
    }

    /// `value` encoded by the `JSONEncoder` whose output this encoder reproduces (same
    /// options): the reference the tests compare against, and the fallback for usage this
    /// writer does not reproduce in place.
    public static func foundationEncode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }
}
