/// The exhaustive check of a test that reads eight bytes at a time (`CanonicalJSONSession.needsEscape`,
/// `PlainRecordDecoding.isPlainWord`) against the same test byte by byte.
enum ByteWordCheck {
    /// How many words `wordHas` answers differently from "one of its bytes has `byteHas`".
    ///
    /// Each word is `filler` in every byte but two, which hold `first` and `second` at every
    /// pair of places; `pairs` picks which byte pairs are tried (all 65 536 for every filler
    /// takes minutes in a debug build). Fillers either side of a borrow find a test that reads
    /// a neighbour's borrow as a match.
    static func mismatches(
        fillers: [UInt8], pairs: (_ first: UInt8, _ second: UInt8) -> Bool, wordHas: (UInt64) -> Bool,
        byteHas: (UInt8) -> Bool
    ) -> Int {
        var mismatches = 0
        for filler in fillers {
            for first in UInt8.min...UInt8.max {
                for second in UInt8.min...UInt8.max where pairs(first, second) {
                    let expected = byteHas(filler) || byteHas(first) || byteHas(second)
                    for a in 0..<8 {
                        for b in 0..<8 where b != a {
                            var word = UInt64(filler) &* 0x0101_0101_0101_0101
                            word = word & ~(0xFF << (8 * a)) | UInt64(first) << (8 * a)
                            word = word & ~(0xFF << (8 * b)) | UInt64(second) << (8 * b)
                            if wordHas(word) != expected { mismatches += 1 }
                        }
                    }
                }
            }
        }
        return mismatches
    }
}
