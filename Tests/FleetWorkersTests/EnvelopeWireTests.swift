import FleetModel
import FleetTestSupport
import FleetWorkers
import Foundation
import Kafka
import PropertyBased
import StateImages
import SwiftProtobuf
import Testing

/// The state and history-image envelopes are written with `ProtobufWireWriter`; these hold them
/// to the bytes SwiftProtobuf serialises for the same `Fleet_State_ChangelogState` and
/// `Fleet_State_HistoryImage`, at every edge (a migrated state's offset -1, no wake-up, a
/// wake-up before the epoch, images long enough for two- and three-byte lengths, empty lists).
@Suite("Changelog envelopes on the wire")
struct EnvelopeWireTests {
    static let offsets: [Int64] = [0, 1, -1, 127, 128, Int64(Int32.max) + 1, .max, .min]
    static let times: [Int64] = [0, 1, -1, 1_770_000_000_000, -62_135_596_800_000]
    static let lengths = [0, 1, 127, 128, 16_383, 16_384, 70_000]

    @Test("state records: the direct envelope is byte for byte the generated message's serialisation")
    func stateEnvelope() async {
        await propertyCheck(count: 300, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var r = SplitMix64(seed: seed)
            let image = [0x08, 0x01] + (0..<Self.lengths[r.int(Self.lengths.count)]).map { UInt8(truncatingIfNeeded: $0) }
            let offset = Self.offsets[r.int(Self.offsets.count)]
            let wakeUp: ChangelogRecords.WakeUp = switch r.int(3) {
            case 0: .unrecorded
            case 1: .recorded(nil)
            default: .recorded(Timestamp(millisecondsSinceEpoch: Self.times[r.int(Self.times.count)]))
            }
            let record = ChangelogRecords.state(userId: "u", image: image, inputOffset: offset, wakeUp: wakeUp, topic: "s", partition: 3)

            var reference = Fleet_State_ChangelogState()
            reference.format = ChangelogRecords.envelopeFormat
            reference.inputOffset = offset
            reference.state = Data(image)
            if case .recorded(let due) = wakeUp {
                reference.wakeUpRecorded = true
                if let due { reference.nextWakeUp = due.millisecondsSinceEpoch }
            }
            let expected: [UInt8] = try reference.serializedBytes()
            #expect(record.value == expected, "seed \(seed)")
        }
    }

    @Test("history images: the direct envelope is byte for byte the generated message's serialisation")
    func historyEnvelope() async {
        await propertyCheck(count: 300, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var r = SplitMix64(seed: seed)
            let after = (0..<Self.lengths[r.int(Self.lengths.count)]).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let unitStart = [0, 1, 5_000, Int64(Int32.max) * 4][r.int(4)]
            let changed = (0..<[0, 1, 3, 200][r.int(4)]).map { unitStart + Int64($0) * [1, 127, 20_000][r.int(3)] }
            let logTime = Timestamp(millisecondsSinceEpoch: Self.times[r.int(Self.times.count)])
            let inputTopic = ["", "rin.delivery.inbox", String(repeating: "t", count: 200)][r.int(3)]
            let partition = [Int32(0), 1, 200, .max][r.int(4)]
            let record = ChangelogRecords.historyImage(
                userId: "u", after: after, unitStart: unitStart, changed: changed, logTime: logTime, inputTopic: inputTopic,
                topic: "h", partition: partition)

            var reference = Fleet_State_HistoryImage()
            reference.format = ChangelogRecords.historyImageFormat
            reference.after = Data(after)
            reference.unitStart = unitStart
            reference.changed = changed.map { UInt64($0 - unitStart) }
            reference.logTime = logTime.millisecondsSinceEpoch
            reference.inputTopic = inputTopic
            reference.inputPartition = partition
            let expected: [UInt8] = try reference.serializedBytes()
            #expect(record.value == expected, "seed \(seed)")
        }
    }
}
