extension Array {
    /// Reverses the elements in place, each moved, so that `popLast()` then hands them out in
    /// their original order, each moved again: the way the fold and the runtime take a list's
    /// elements over one by one without a copy of any.
    ///
    /// Why not `reverse()`: the generic `MutableCollection` one swaps through copies (a retain
    /// and a release of every reference an element holds); the buffer's `swapAt` moves. Why not
    /// iterating: a loop over a list copies each element it hands out, and the list releases
    /// them all again when it goes.
    @inlinable
    public mutating func reverseForPopping() {
        withUnsafeMutableBufferPointer { $0.reverse() }
    }
}
