import CRdKafka
import Synchronization

/// Collects the delivery reports of records produced together and wakes the sender once all of
/// them have one.
///
/// Every produced message carries, as librdkafka's per-message opaque, the address of its slot in
/// `slots`; the delivery-report callback (on the producer's poll thread) writes only that slot and
/// decrements `remaining` under the lock — it never does more than that and resuming the sender.
/// Each slot is written by exactly one callback (or by the sender, for a record librdkafka refused),
/// and the sender reads the slots only after `remaining` reached zero, so the lock orders all writes
/// before the reads. The sender keeps the batch alive until then, so callbacks never see a freed batch.
final class DeliveryBatch: @unchecked Sendable {
    struct Slot {
        var owner: Unmanaged<DeliveryBatch>
        var partition: Int32 = -1
        var offset: Int64 = -1
        var error: KafkaError?
    }

    private struct State {
        var remaining: Int
        var waiter: CheckedContinuation<Void, Never>?
    }

    let count: Int
    let slots: UnsafeMutablePointer<Slot>
    private let state: Mutex<State>

    init(count: Int) {
        self.count = count
        self.state = Mutex(State(remaining: count))
        self.slots = .allocate(capacity: max(count, 1))
        let owner = Unmanaged<DeliveryBatch>.passUnretained(self)
        slots.initialize(repeating: Slot(owner: owner), count: count)
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }

    /// The opaque to hand to librdkafka for record `index`.
    func opaque(for index: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(slots + index)
    }

    /// Called from the delivery-report callback with the message's opaque.
    static func deliver(opaque: UnsafeMutableRawPointer, partition: Int32, offset: Int64, error: KafkaError?) {
        let slot = opaque.assumingMemoryBound(to: Slot.self)
        let batch = slot.pointee.owner.takeUnretainedValue()
        slot.pointee.partition = partition
        slot.pointee.offset = offset
        slot.pointee.error = error
        batch.completeOne()
    }

    /// Records that librdkafka refused record `index` (no delivery report will come for it).
    func refuse(_ index: Int, error: KafkaError) {
        slots[index].error = error
        completeOne()
    }

    /// The first record's error, in record order, with its `recordIndex`; nil when every record
    /// was delivered. Read once `waitForAll` returned.
    func firstError() -> KafkaError? {
        for index in 0..<count {
            if var error = slots[index].error {
                error.recordIndex = index
                return error
            }
        }
        return nil
    }

    private func completeOne() {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Suspends until every record has a report or a refusal.
    func waitForAll() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.remaining == 0 { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}
