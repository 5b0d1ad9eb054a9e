/// A tiny seeded pseudo-random generator (SplitMix64) for generating test traffic and benchmark
/// workloads. Not for the fleet's logic, which never draws random numbers (DESIGN.md principle 3):
/// tests use it so that a failing case is reproduced exactly from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// An independent generator, so one user's draws do not shift another's.
    public mutating func split() -> SplitMix64 { SplitMix64(seed: next()) }

    /// A number in `0..<bound`.
    public mutating func int(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// A number in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double(next() >> 11) / Double(1 << 53) < p }

    /// Fisher–Yates shuffle of `values` in place.
    public mutating func shuffle<T>(_ values: inout [T]) {
        guard values.count > 1 else { return }
        for i in stride(from: values.count - 1, to: 0, by: -1) {
            values.swapAt(i, int(0...i))
        }
    }
}
