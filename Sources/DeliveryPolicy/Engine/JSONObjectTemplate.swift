import FleetModel

/// Builds `JSONObject`s that all have one fixed set of keys, without looking the keys up for
/// each object.
///
/// Why: the engine writes a section item or a retention event for a good share of its steps.
/// Building one from a literal compared each key with the ones before it and placed it in name
/// order. A template keeps one prototype holding every key, and each key's position in it; an
/// object is a copy of the prototype (one allocation, the keys shared) with its values set at
/// those positions. The result equals the literal's.
struct JSONObjectTemplate: Sendable {
    private let prototype: JSONObject
    private let slots: [Int]

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
        object.setValue(v0, at: slots[0])
        object.setValue(v1, at: slots[1])
        object.setValue(v2, at: slots[2])
        object.setValue(v3, at: slots[3])
        return object
    }

    func make(
        _ v0: consuming JSONValue, _ v1: consuming JSONValue, _ v2: consuming JSONValue, _ v3: consuming JSONValue,
        _ v4: consuming JSONValue
    ) -> JSONObject {
        var object = start(5)
        object.setValue(v0, at: slots[0])
        object.setValue(v1, at: slots[1])
        object.setValue(v2, at: slots[2])
        object.setValue(v3, at: slots[3])
        object.setValue(v4, at: slots[4])
        return object
    }

    func make(
        _ v0: consuming JSONValue, _ v1: consuming JSONValue, _ v2: consuming JSONValue, _ v3: consuming JSONValue,
        _ v4: consuming JSONValue, _ v5: consuming JSONValue
    ) -> JSONObject {
        var object = start(6)
        object.setValue(v0, at: slots[0])
        object.setValue(v1, at: slots[1])
        object.setValue(v2, at: slots[2])
        object.setValue(v3, at: slots[3])
        object.setValue(v4, at: slots[4])
        object.setValue(v5, at: slots[5])
        return object
    }

    /// A copy of the prototype, checked to have `count` keys.
    private func start(_ count: Int) -> JSONObject {
        precondition(count == slots.count, "a template of \(slots.count) keys given \(count) values")
        return prototype
    }
}
