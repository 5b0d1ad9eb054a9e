import DeliveryPolicy
import FleetModel
import PropertyBased
import Synchronization
import Testing

/// The changelog bytes of the engine's states: `CanonicalJSONEncoder` must write exactly what
/// `DeliveryState.serialized()` (Foundation's `JSONEncoder`, sorted keys) writes, for every
/// state the engine reaches over random traffic (`RandomTraffic`: zones with DST and odd
/// offsets, quiet hours, bursts of every intent type, opens, dismissals, lapses). P-IDEM-1's
/// memory, pending candidates with free-form intent data, day ledgers and cool-downs all end up
/// in these states.
@Suite struct StateEncodingTests {
    @Test("every state the engine reaches encodes to the same bytes as with JSONEncoder")
    func deliveryStatesAgree() async {
        let checked = StatesChecked()
        await propertyCheck(count: 150, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            let states = StateImageTests.states(seed: seed)
            for state in states {
                let new = try? CanonicalJSONEncoder.encode(state)
                #expect(new == state.serialized(), "seed \(seed): \(String(decoding: state.serialized(), as: UTF8.self))")
            }
            checked.add(states.count)
        }
        // Not vacuous: thousands of distinct states.
        #expect(checked.value > 1000)
    }
}

/// How many states the property's runs compared, all runs together.
final class StatesChecked: Sendable {
    private let storage = Mutex(0)
    func add(_ n: Int) { storage.withLock { $0 += n } }
    var value: Int { storage.withLock { $0 } }
}
