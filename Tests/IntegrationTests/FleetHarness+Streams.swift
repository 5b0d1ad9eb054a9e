import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Testing

/// Reading and writing whole streams for the fault tests: a workload produced in a steady
/// trickle, output topics read until an expected set of ids has arrived, and the restore
/// markers of `<worker>.state` that show which instance took a partition when.
extension FleetHarness {
    /// Produces `entries` to the delivery inbox in chunks of `chunk` records, `pause` apart (a
    /// steady stream rather than one burst), each to its entry's partition.
    func stream(_ entries: [InboxWorkload.Entry], chunk: Int = 10, pause: Duration = .milliseconds(100)) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
        let topic = namespace.physical(Topics.deliveryInbox)
        var start = 0
        while start < entries.count {
            let slice = entries[start..<min(start + chunk, entries.count)]
            _ = try await producer.send(slice.map { entry in
                ProducerRecord(topic: topic, partition: entry.partition, key: entry.record.userId,
                               value: RecordCodec.encode(entry.record), timestamp: entry.time.millisecondsSinceEpoch)
            })
            start += chunk
            if start < entries.count { try await Task.sleep(for: pause) }
        }
        await producer.close()
    }

    /// Reads a logical topic from the beginning until `isDone` holds for what arrived, or
    /// `timeout` passes; returns what arrived (callers assert on it).
    func read(
        _ topic: String, timeout: Duration, until isDone: @escaping @Sendable ([KafkaMessage]) -> Bool
    ) async throws -> [KafkaMessage] {
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": bootstrap, "group.id": "reader-\(UUID().uuidString.prefix(8))",
        ]), logger: .tests)
        var offsets: [TopicPartition: Int64] = [:]
        for p in 0..<partitions { offsets[TopicPartition(namespace.physical(topic), p)] = KafkaConsumer.beginning }
        try await consumer.assign(offsets)
        let messages = try await consumer.collect(timeout: timeout, until: isDone)
        await consumer.close()
        return messages.sorted { ($0.partition, $0.offset) < ($1.partition, $1.offset) }
    }

    /// Reads a logical output topic until every id of `expected` arrived (or `timeout`), and
    /// returns the records by id. Copies of one id (at-least-once repeats a crashed tail) must be
    /// byte-identical: a differing copy is recorded as an issue.
    func outputs(_ topic: String, expecting expected: Set<String>, timeout: Duration = .seconds(60)) async throws -> [String: [UInt8]] {
        let messages = try await read(topic, timeout: timeout) { messages in
            expected.isSubset(of: Set(messages.compactMap(Self.recordId)))
        }
        var byId: [String: [UInt8]] = [:]
        for message in messages {
            guard let id = Self.recordId(message), let value = message.value else {
                Issue.record("\(topic)[\(message.partition)]@\(message.offset) is not a fleet record")
                continue
            }
            if let earlier = byId[id], earlier != value {
                Issue.record("""
                    two copies of \(id) in \(topic) differ:
                    \(String(decoding: earlier, as: UTF8.self))
                    \(String(decoding: value, as: UTF8.self))
                    """)
            }
            byId[id] = value
        }
        return byId
    }

    private static func recordId(_ message: KafkaMessage) -> String? {
        message.value.flatMap { try? RecordCodec.decode($0) }?.id
    }

    /// The physical inbox log, all `count` records of it.
    func inboxLog(count: Int) async throws -> [KafkaMessage] {
        let log = try await read(Topics.deliveryInbox, count: count)
        try #require(log.count == count, "the inbox holds \(log.count) records, \(count) were produced")
        return log
    }

    /// Appends a marker with `nonce` to every partition of `<worker>.state`: a point in the
    /// changelog that later markers can be compared with (restore ignores foreign markers).
    func markChangelog(of worker: Worker, nonce: String) async throws {
        let producer = try KafkaProducer(configuration: KafkaConfiguration(bootstrapServers: bootstrap), logger: .tests)
        _ = try await producer.send((0..<partitions).map {
            ChangelogRecords.marker(nonce: nonce, topic: namespace.physical(worker.stateTopic), partition: $0)
        })
        await producer.close()
    }

    /// The restore markers of `<worker>.state` per partition, in log order, up to the markers
    /// with `nonce` (which `markChangelog` must have written).
    func changelogMarkers(of worker: Worker, upTo nonce: String, timeout: Duration = .seconds(30)) async throws -> [Int32: [String]] {
        let partitionCount = Int(partitions)
        let messages = try await read(worker.stateTopic, timeout: timeout) { messages in
            Set(messages.filter { Self.markerNonce($0) == nonce }.map(\.partition)).count == partitionCount
        }
        var markers: [Int32: [String]] = [:]
        var closed: Set<Int32> = []
        for message in messages where !closed.contains(message.partition) {
            guard let found = Self.markerNonce(message) else { continue }
            markers[message.partition, default: []].append(found)
            if found == nonce { closed.insert(message.partition) }
        }
        try #require(closed.count == partitionCount, "the end markers \(nonce) did not all come back")
        return markers
    }

    /// Waits until `instance` wrote a restore marker to some partition of `<worker>.state` after
    /// the test's marker `mark` there: it was assigned that partition.
    func awaitMarker(of worker: Worker, by instance: WorkerInstance, after mark: String, timeout: Duration = .seconds(60)) async throws {
        let messages = try await read(worker.stateTopic, timeout: timeout) { messages in
            var marked: Set<Int32> = []
            for message in messages {
                guard let nonce = Self.markerNonce(message) else { continue }
                if nonce == mark { marked.insert(message.partition) }
                if marked.contains(message.partition), instance.wrote(marker: nonce) { return true }
            }
            return false
        }
        let found = messages.compactMap(Self.markerNonce)
        try #require(found.contains { instance.wrote(marker: $0) }, "\(instance.name) (pid \(instance.pid ?? 0)) restored no partition within \(timeout); markers: \(found)")
    }

    private static func markerNonce(_ message: KafkaMessage) -> String? {
        let kind = message.header(ChangelogRecords.kindHeader).map { String(decoding: $0, as: UTF8.self) }
        guard kind == ChangelogRecords.Kind.marker.rawValue,
              case .marker(let nonce)? = try? ChangelogRecords.entry(of: message, as: JSONValue.self)
        else { return nil }
        return nonce
    }
}
