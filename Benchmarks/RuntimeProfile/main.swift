import DeliveryPolicy
import DeliveryWorkload
import FleetLogTesting
import FleetModel
import FleetService
import FleetWorkers
import Foundation
import Kafka
import Logging

// The delivery worker's whole runtime (lanes, fold, emit, seal, commit coordinator) folding
// RuntimeBenchmark's input on the in-memory log (`FleetLogTesting`) instead of a broker: the
// Swift side of the worker's CPU per input, without librdkafka, Tansu or a network. Set next to
// RuntimeBenchmark's CPU per input (same records, same outputs) it says how much of the worker's
// CPU is ours and how much the Kafka client's, and `perf record -g` of it profiles the runtime
// around the fold with nothing else on the cores (FoldProfile covers the fold alone, and is the
// one valgrind runs: valgrind 3.19 crashes as this process starts its concurrency threads).
//
//   swift build -c release --product RuntimeProfile
//   N=200000 PARTITIONS=4 MODE=at_least_once .build/release/RuntimeProfile
//
// The in-memory log's own work (appends under a lock, a copy of each record) is part of the
// figure, as librdkafka's is part of RuntimeBenchmark's; a profile shows it as FleetLogTesting
// (about 7 % of the samples). Commit units follow the wall clock (FLEET_COMMIT_INTERVAL_MS,
// 100 ms by default, as in a worker), so the changelog's size moves a little with the machine's
// speed; the outputs do not: the digest covers every output topic's committed records in
// partition order, and must not change when the runtime's cost does. The CPU figure still moves
// about ±10 % between runs on this two-core machine: compare alternating runs, several each.

let environment = ProcessInfo.processInfo.environment
let count = Int(environment["N"] ?? "") ?? 200_000
let partitions = Int(environment["PARTITIONS"] ?? "") ?? 4
guard let guarantee = DeliveryGuarantee(rawValue: environment["MODE"] ?? "at_least_once") else {
    fatalError("MODE must be at_least_once or exactly_once")
}

let namespace = TopicNamespace()
let inbox = namespace.physical(Topics.deliveryInbox)
let log = InMemoryLog(group: "delivery")
log.createTopics(TopicSpec.all.map { namespace.physical($0.name) }, partitions: partitions)
let records = Workload.firstRecords(count).map { at, userId, record in
    ProducerRecord(topic: inbox, key: userId, value: RecordCodec.encode(record), timestamp: at.millisecondsSinceEpoch)
}
try log.append(records)

let settings = try WorkerSettings(worker: .delivery, environment: [
    "FLEET_BOOTSTRAP_SERVERS": "in-memory:9092",
    "FLEET_GROUP_ID": "delivery",
    "FLEET_GUARANTEE": guarantee.rawValue,
    "FLEET_TICK_INTERVAL_MS": "0",
    "FLEET_HTTP_PORT": "0",
].merging(environment.filter { $0.key.hasPrefix("FLEET_") }) { _, override in override })
var logger = Logger(label: "runtime-profile")
logger.logLevel = .warning
let runtime = WorkerRuntime(
    settings: settings, processor: DeliveryEngine(profile: try PolicyProfile.shipped("rin")),
    clients: InMemoryLogClients(log: log, instance: "profile", guarantee: guarantee), logger: logger)

func caughtUp() -> Bool {
    let committed = log.committedOffsets
    return (0..<partitions).allSatisfy { partition in
        let position = TopicPartition(inbox, Int32(partition))
        return (committed[position] ?? 0) == log.endOffset(position)
    }
}

let cpuStart = processCPUSeconds()
let start = ContinuousClock.now
let running = Task { try await runtime.run() }
while !caughtUp() {
    try await Task.sleep(for: .milliseconds(5))
}
let seconds = (ContinuousClock.now - start) / .seconds(1)
let cpuSeconds = processCPUSeconds() - cpuStart
running.cancel()

var digest = FNV1a64()
var written: [String: Int] = [:]
for topic in TopicSpec.all.map(\.name).sorted() {
    let partitionsRead = log.committedRecords(namespace.physical(topic))
    let total = partitionsRead.reduce(0) { $0 + $1.count }
    guard total > 0, topic != Topics.deliveryInbox else { continue }
    written[topic] = total
    // The changelog and history hold one image per user per commit unit: they follow the units.
    if topic == Worker.delivery.stateTopic || topic == Worker.delivery.historyTopic { continue }
    for messages in partitionsRead {
        for message in messages {
            digest.add(message.key ?? [])
            digest.add(message.value ?? [])
        }
    }
}
print("written: " + written.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
print(String(
    format: "RESULT runtime_profile_%@ records=%d partitions=%d secs=%.3f records_per_s=%.0f cpu_secs=%.3f cpu_secs_per_1000_inputs=%.4f outputs_digest=%016llx",
    guarantee.rawValue, count, partitions, seconds, Double(count) / seconds, cpuSeconds, cpuSeconds / Double(count) * 1000,
    digest.value))
exit(0)
