extension Array {
    /// The elements in reverse order, each moved into the result: `self` is left empty, and
    /// popping the result's last element hands them out in their original order, moved again.
    ///
    /// Why not `reverse()` and then `popLast()`: the generic `reverse()` swaps through copies,
    /// and a copy of a consumed record is a retain (and later a release) of its topic, key,
    /// value and headers. `popLast()` and `append(_:)` move.
    mutating func takeReversed() -> [Element] {
        var reversed: [Element] = []
        reversed.reserveCapacity(count)
        while let element = popLast() { reversed.append(element) }
        return reversed
    }
}
