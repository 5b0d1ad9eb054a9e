import FleetModel

/// Builds `JSONObject`s that all have one fixed set of keys, without hashing the keys for each
/// object.
///
/// Why: the engine writes a section item or a retention event for a good share of its steps,
/// and their payloads are `[String: JSONValue]` (FleetModel's record formats). Building one
/// from a dictionary literal hashed every key (SipHash over the key's bytes, a few hundred
/// instructions each) and probed the table for it. A template keeps one prototype holding every
/// key, and each key's index in it; an object is a copy of the prototype (one allocation, the
/// keys shared) with its values assigned through those indices. A copy of a dictionary is an
/// equal value with the same storage layout, so the prototype's indices are valid for it, and
/// assigning through `values` moves no element. The result equals the literal's.
struct JSONObjectTemplate: Sendable {
    private let prototype: JSONObject
    private let slots: [JSONObject.Index]

    init(keys: [String]) {
        var prototype = JSONObject(minimumCapacity: keys.count)
        for key in keys { prototype[key] = .null }
        precondition(prototype.count == keys.count, "template keys must be distinct: \(keys)")
        self.prototype = prototype
        self.slots = keys.compactMap { prototype.index(forKey: $0) }
    }

    /// The object with `values[i]` under `keys[i]`.
    func make(_ values: JSONValue...) -> JSONObject {
        precondition(values.count == slots.count, "a template of \(slots.count) keys given \(values.count) values")
        var object = prototype
        for i in slots.indices { object.values[slots[i]] = values[i] }
        return object
    }
}
