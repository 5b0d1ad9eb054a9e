import FleetModel

extension Dictionary where Key == String, Value == JSONValue {
    /// `self[key]`, found by comparing keys when the object is small.
    ///
    /// Why: intent `data` holds a few fields, and the engine reads them by name several times
    /// per intent (validation, since-open totals, rendering, section items). A `Dictionary`
    /// lookup hashes the key with SipHash first, some 300 instructions for a short key; equal
    /// short keys are equal small strings, so comparing `key` with each of a handful of keys
    /// costs about half of that. Larger objects are looked up as usual. Same result either way.
    func field(_ key: String) -> JSONValue? {
        guard count <= 4 else { return self[key] }
        var index = startIndex
        while index != endIndex {
            if keys[index] == key { return values[index] }
            formIndex(after: &index)
        }
        return nil
    }
}
