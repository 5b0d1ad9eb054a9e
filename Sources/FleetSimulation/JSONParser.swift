import FleetModel

/// The simulator's reading of its input lines: strict RFC 8259 (FleetModel's `JSONReader` in its
/// `.strict` dialect) into `JSONValue`, the last of duplicate member names winning, integers
/// beyond 64 bits as doubles. One pass over the bytes, ten times cheaper than `JSONDecoder` into
/// `JSONValue`, and it says where the text goes wrong.
enum JSONParser {
    typealias Failure = JSONReader.Failure

    /// Parses one JSON text (surrounding whitespace allowed).
    static func parse(_ text: some StringProtocol) throws(Failure) -> JSONValue {
        try JSONReader.read(text.utf8, dialect: .strict).simulatorValue
    }
}
