import DeliveryPolicy
import DeliveryWorkload
import FleetModel
import FleetWorkers
import Foundation
import Kafka

// The delivery worker's per-record fold work without a broker: decode, engine step, the bound
// checks' encodings, the producer records of outputs and the changelog records a unit seals
// with, on one partition. For valgrind (callgrind counts it reproducibly on a loaded machine)
// and for a wall-clock figure of the fold alone, which RuntimeBenchmark's records/s can be set
// against (issue 19: where the worker's CPU per input goes).
//
//   swift build -c release --product FoldProfile
//   cp .build/release/FoldProfile /tmp/fp && strip --strip-debug /tmp/fp
//   N=50000 UNIT=8000 valgrind --tool=callgrind /tmp/fp
//
// Prints the records/s of the fold and an FNV digest of every byte it would produce, which must
// not change when the fold's cost does.

let environment = ProcessInfo.processInfo.environment
let count = Int(environment["N"] ?? "") ?? 50_000
let unitRecords = Int(environment["UNIT"] ?? "") ?? 8_000

let timeline = Workload.firstRecords(count)
let messages = timeline.prefix(count).enumerated().map { offset, entry in
    KafkaMessage(
        topic: Topics.deliveryInbox, partition: 0, offset: Int64(offset), key: Array(entry.userId.utf8),
        value: RecordCodec.encode(entry.record), timestamp: entry.at.millisecondsSinceEpoch, timestampType: .createTime)
}

struct Digest {
    var value: UInt64 = 0xcbf2_9ce4_8422_2325
    mutating func add(_ bytes: [UInt8]?) {
        for byte in bytes ?? [] { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
    mutating func add(_ record: ProducerRecord) {
        add(Array(record.topic.utf8)); add(record.key); add(record.value)
        for header in record.headers { add(Array(header.name.utf8)); add(header.value) }
    }
}

let profile = try PolicyProfile.shipped("rin")
let namespace = TopicNamespace(prefix: "")
var fold = PartitionFold(processor: DeliveryEngine(profile: profile))
fold.recording = .users  // as a lane writing binary images
var digest = Digest()
var produced = 0
// The changed users of the open unit, as a lane keeps them: the image the bound check encoded,
// if any, and the offset; the state itself is read from the fold at the seal.
var states: [String: (image: [UInt8]?, offset: Int64)] = [:]
var unitStart: Int64?
var changeCount = 0
var stateRecords = 0

@MainActor func seal() throws {
    for user in states.keys.sorted() {
        guard let entry = states[user],
              let image = try fold.withState(of: user, { state in try entry.image ?? StateCoding.encode(state) })
        else { continue }
        digest.add(ChangelogRecords.state(
            userId: user, image: image, inputOffset: entry.offset, topic: "state", partition: 0))
        produced += 1
        stateRecords += 1
    }
    states.removeAll(keepingCapacity: true)
    unitStart = nil
}

let start = ContinuousClock.now
// One writing session for every output, as a lane keeps one for each batch it folds.
let writer = RecordCodec.Writer()
for message in messages {
    if unitStart == nil { unitStart = message.offset }
    let folded = LogFolding.fold(message, into: &fold, writer: writer)
    guard let step = folded.step else { continue }
    for (index, (output, value)) in zip(step.outputs, folded.outputValues).enumerated() {
        digest.add(LogFolding.producerRecord(
            for: output, value: value, index: index, of: folded.origin, originIndex: folded.originIndex, in: namespace))
        produced += 1
    }
    for index in 0..<min(step.changeCount, folded.stateImages.count) {
        states[step.changedUser(at: index)] = (folded.stateImages[index], message.offset)
        changeCount += 1
    }
    if Int(message.offset + 1) % unitRecords == 0 { try seal() }
}
try seal()
let seconds = (ContinuousClock.now - start) / .seconds(1)
print(String(format: "RESULT fold records=%d changes=%d state_records=%d produced=%d secs=%.3f records_per_s=%.0f digest=%016llx",
             messages.count, changeCount, stateRecords, produced, seconds, Double(messages.count) / seconds, digest.value))
