import DeliveryPolicy
import FleetModel

/// A fingerprint of everything a workload run wrote, to check that an optimisation of the engine
/// left every byte alone: FNV-1a 64 over each output's topic, timestamp, own-id flag and
/// canonical record bytes (`RecordCodec.encode`, what the runtime produces), and separately over
/// the state after each step (timers fired, or a record processed) in both encodings the runtime
/// writes: the binary changelog image and the canonical JSON. Two builds agree on both values
/// when decisions, deliveries, section items, events, ids and state images are byte-identical.
public struct WorkloadDigest: Sendable, CustomStringConvertible {
    public private(set) var outputs = FNV1a64()
    public private(set) var states = FNV1a64()
    public private(set) var outputCount = 0
    public private(set) var stateCount = 0

    mutating func add(_ records: [OutputRecord], state: DeliveryState) {
        for output in records {
            outputs.add(Array(output.topic.utf8))
            outputs.add(Array("\(output.timestamp.millisecondsSinceEpoch):\(output.hasOwnId)".utf8))
            outputs.add(RecordCodec.encode(output.record))
            outputCount += 1
        }
        do {
            states.add(try state.binaryImage())
        } catch {
            preconditionFailure("state image failed: \(error)")
        }
        states.add(state.serialized())
        stateCount += 1
    }

    public var description: String {
        "outputs \(outputCount) fnv=\(String(outputs.value, radix: 16)), states \(stateCount) fnv=\(String(states.value, radix: 16))"
    }
}

/// FNV-1a, 64 bits; each added field is followed by a separator byte.
public struct FNV1a64: Sendable {
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func add(_ bytes: [UInt8]) {
        for byte in bytes { mix(byte) }
        mix(0xFF)
    }

    public mutating func add(_ text: String) { add(Array(text.utf8)) }

    private mutating func mix(_ byte: UInt8) {
        value ^= UInt64(byte)
        value = value &* 0x100_0000_01b3
    }
}
