/// A processor state with a compact, versioned binary image (DESIGN.md principle 5): what the
/// runtime writes to `<worker>.state` and `<worker>.history` instead of JSON.
///
/// Why a protocol in the model: the runtime, replay and the operator tools are generic over
/// `UserProcessor.State` and must not know each worker's schema; a state that conforms is
/// written binary, any other (test processors) as canonical JSON, and both read back.
///
/// Contract: `binaryImage()` starts with the format version (the schema's field 1, so the first
/// byte is `0x08`, never `{`, which starts every JSON image of earlier versions);
/// `init(binaryImage:)` decodes every format version ever released and throws
/// `StateImageError`, never traps, on any other bytes; `init(binaryImage: s.binaryImage()) == s`.
public protocol BinaryStateImage {
    /// The format version this build writes.
    static var stateImageFormat: UInt32 { get }

    /// The state's binary image. Deterministic: equal states give equal bytes.
    func binaryImage() throws(StateImageError) -> [UInt8]

    /// Decodes an image written by `binaryImage()` of this or any earlier released version.
    init(binaryImage bytes: [UInt8]) throws(StateImageError)

    /// An upper bound on `binaryImage().count` that costs no encoding (`ImageSizeBound`), or nil
    /// when the type has none. The runtime checks the state a record leaves against
    /// `RecordLimits.maxStateBytes` after every step, but writes only a user's last image of a
    /// unit: with a bound under the limit it encodes once, when the unit is sealed, instead of at
    /// every change. Never below the true size, or an oversized state would get through.
    func binaryImageSizeBound() -> Int?
}

extension BinaryStateImage {
    /// No bound: the state is encoded at every change to check its size.
    public func binaryImageSizeBound() -> Int? { nil }
}

/// Why an image did not decode (or a state did not encode): clear enough to act on, naming
/// the format version and the field where known.
public struct StateImageError: Error, CustomStringConvertible, Sendable, Hashable {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// The checks every state image's decoder shares.
public enum StateImageFormat {
    /// Refuses an image without a format version (field 1 absent: not an image at all) or with
    /// one this build does not know (written by a newer version: decoding it as ours could
    /// silently drop what the newer version meant).
    public static func check(_ format: UInt32, reads current: UInt32, of what: String) throws(StateImageError) {
        if format == 0 {
            throw StateImageError("\(what) image has no format version (field 1): not a state image")
        }
        if format > current {
            throw StateImageError("\(what) image has format \(format); this build reads formats 1…\(current) (written by a newer version?)")
        }
    }

    /// The format version a binary image starts with (field 1, `0x08` and a varint, as
    /// `BinaryStateImage` requires), read without decoding the image; nil when it does not
    /// start so. Restore decodes an image of a format newer than its build reads at once, so
    /// such a changelog stops the restore instead of being held (see `PartitionFold`).
    public static func leadingFormat(of image: [UInt8]) -> UInt32? {
        guard image.first == 0x08 else { return nil }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        for byte in image.dropFirst().prefix(5) {
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return UInt32(exactly: result) }
            shift += 7
        }
        return nil
    }

    /// A minute of the day (0–1439) from an image, refused outside that range.
    public static func timeOfDay(_ minute: UInt32, _ field: String) throws(StateImageError) -> LocalTimeOfDay {
        guard minute < 1440 else { throw StateImageError("\(field): minute of day \(minute) is not 0–1439") }
        return LocalTimeOfDay(hour: Int(minute / 60), minute: Int(minute % 60))
    }

    /// A date from an image, refused unless it is a real calendar date of years 1–9999.
    public static func date(year: Int32, month: UInt32, day: UInt32, _ field: String) throws(StateImageError) -> CivilDate {
        guard (1...9999).contains(year), (1...12).contains(month),
              day >= 1, Int(day) <= CivilDate.daysInMonth(year: Int(year), month: Int(month))
        else { throw StateImageError("\(field): \(year)-\(month)-\(day) is not a date") }
        return CivilDate(year: Int(year), month: Int(month), day: Int(day))
    }

    /// A zone from its IANA identifier in an image; empty means none.
    public static func zone(_ identifier: String, _ field: String) throws(StateImageError) -> Zone? {
        if identifier.isEmpty { return nil }
        guard let zone = Zone(identifier: identifier) else {
            throw StateImageError("\(field): unknown time zone \(RecordError.quote(identifier))")
        }
        return zone
    }
}

extension StateImageFormat {
    /// A JSON object held inside an image (an intent's free-form `data`), read with the fleet's
    /// own parser: `JSONDecoder` into `JSONValue` made it half of a restore's decoding time.
    /// Same values as `JSONDecoder` gives (`JSONValue`'s node decoding mirrors it).
    public static func jsonObject(_ bytes: [UInt8], _ field: String) throws(StateImageError) -> JSONObject {
        do {
            let node = try JSONReader.read(bytes, dialect: .foundationCompatible)
            return try JSONValue.object(node: node, path: .root)
        } catch {
            throw StateImageError("\(field) is not a JSON object: \(error)")
        }
    }
}
