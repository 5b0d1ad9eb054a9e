extension Dictionary where Key == String {
    /// `self[key]`, found by comparing keys when the dictionary is small.
    ///
    /// Why: the engine reads small `String`-keyed dictionaries by name several times per intent:
    /// a type's copy variants, the day's deliveries by type, the cooldowns by category (an
    /// intent's `data` is a `JSONObject`, searched the same way). A `Dictionary` lookup hashes the key with SipHash
    /// first, some 300 instructions for a short key; equal short keys are equal small strings,
    /// so comparing `key` with each of a handful of keys costs about half of that. Larger
    /// dictionaries are looked up as usual. Same result either way.
    func value(forKey key: String) -> Value? {
        guard count <= 4 else { return self[key] }
        var index = startIndex
        while index != endIndex {
            if keys[index] == key { return values[index] }
            formIndex(after: &index)
        }
        return nil
    }
}
