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

    /// The object with the values under the template's keys, in order.
    ///
    /// One overload per number of keys the engine uses, each taking its values `consuming`: a
    /// variadic parameter built an array of the values (an allocation, a copy of each value and
    /// their release) for every object.
    func make(_ v0: consuming JSONValue, _ v1: consuming JSONValue, _ v2: consuming JSONValue, _ v3: consuming JSONValue) -> JSONObject {
        var object = start(4)
        object.values[slots[0]] = v0
        object.values[slots[1]] = v1
        object.values[slots[2]] = v2
        object.values[slots[3]] = v3
        return object
    }

    func make(
        _ v0: consuming JSONValue, _ v1: consuming JSONValue, _ v2: consuming JSONValue, _ v3: consuming JSONValue,
        _ v4: consuming JSONValue
    ) -> JSONObject {
        var object = start(5)
        object.values[slots[0]] = v0
        object.values[slots[1]] = v1
        object.values[slots[2]] = v2
        object.values[slots[3]] = v3
        object.values[slots[4]] = v4
        return object
    }

    func make(
        _ v0: consuming JSONValue, _ v1: consuming JSONValue, _ v2: consuming JSONValue, _ v3: consuming JSONValue,
        _ v4: consuming JSONValue, _ v5: consuming JSONValue
    ) -> JSONObject {
        var object = start(6)
        object.values[slots[0]] = v0
        object.values[slots[1]] = v1
        object.values[slots[2]] = v2
        object.values[slots[3]] = v3
        object.values[slots[4]] = v4
        object.values[slots[5]] = v5
        return object
    }

    /// A copy of the prototype, checked to have `count` keys.
    private func start(_ count: Int) -> JSONObject {
        precondition(count == slots.count, "a template of \(slots.count) keys given \(count) values")
        return prototype
    }
}
