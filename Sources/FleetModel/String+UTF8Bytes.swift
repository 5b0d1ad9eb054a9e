extension String {
    /// Calls `body` with the string's UTF-8 bytes in one buffer, read where they lie.
    ///
    /// Why not `withUTF8`: it is `mutating` (it may make a bridged string native), so a caller
    /// with a `let` copied the string into a `var` first, a retain and a release, atomic on every
    /// core, per call. Native and small strings (all of Linux's) lend their bytes in place;
    /// anything else is copied once. The hot writers and hashes (JSON strings, output ids, key
    /// order, idempotency hashes) all read strings through here.
    @inlinable
    public func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }
}
