import Foundation
public import FleetModel
public import Kafka
import Synchronization

extension FleetTopicReader {
    /// Per logical partition, the first offset whose record is stamped at or after `time`, or
    /// the partition's end when none is: Kafka's offsets-for-times, so a tool reads from there
    /// instead of from the beginning.
    ///
    /// The brokers' answer is checked before it is used: the record at the answer must be
    /// stamped at or after `time` and the one before it earlier (two records read per
    /// partition). Apache Kafka passes; a broker that answers 0 for everything (the local test
    /// broker) or nothing fails it, and then that partition's offset is found by scanning its
    /// timestamps from the beginning up to the first match, in bounded memory. The fallback is
    /// said once per process on standard error.
    ///
    /// - Parameter scanFrom: where a fallback scan may start per partition, when an earlier
    ///   answer for an earlier time is known (the first record at or after a later time cannot
    ///   come before it): a range's `--to` after its `--from`.
    public func offsets(
        atOrAfter time: Timestamp, in partitions: [TopicPartition], scanFrom: [TopicPartition: Int64] = [:]
    ) async throws -> [TopicPartition: Int64] {
        guard !partitions.isEmpty else { return [:] }
        let consumer = try KafkaConsumer(configuration: readerConfiguration(purpose: "seek"), logger: logger)
        var watermarks: [TopicPartition: Watermarks] = [:]
        var asked: [TopicPartition: Int64] = [:]
        var answered: [TopicPartition: Int64] = [:]
        do {
            for partition in partitions {
                let physical = TopicPartition(namespace.physical(partition.topic), partition.partition)
                watermarks[partition] = try await consumer.queryWatermarks(physical, timeout: timeout)
                asked[physical] = time.millisecondsSinceEpoch
            }
            // No answer at all is treated like a wrong one: checked, then scanned.
            answered = (try? await consumer.offsets(forTimestamps: asked, timeout: timeout)) ?? [:]
            await consumer.close()
        } catch {
            await consumer.close()
            throw error
        }
        var result: [TopicPartition: Int64] = [:]
        var unverified: [TopicPartition] = []
        for partition in partitions {
            guard let marks = watermarks[partition] else { continue }
            if marks.high <= marks.low {
                result[partition] = marks.high
                continue
            }
            let answer = answered[TopicPartition(namespace.physical(partition.topic), partition.partition)] ?? marks.high
            if answer >= marks.low, answer <= marks.high,
               try await verify(answer, for: time, in: partition, low: marks.low, high: marks.high)
            {
                result[partition] = answer
            } else {
                unverified.append(partition)
            }
        }
        if let first = unverified.first {
            let answer = answered[TopicPartition(namespace.physical(first.topic), first.partition)]
            SeekNote.once(
                "note: the brokers do not answer offsets-for-times for this topic (\(namespace.physical(first.topic))[\(first.partition)] answered \(answer.map(String.init) ?? "nothing") for \(time.rfc3339)); finding the offsets by scanning timestamps instead")
        }
        for partition in unverified {
            result[partition] = try await scan(
                partition, from: scanFrom[partition] ?? KafkaConsumer.beginning, for: time, end: watermarks[partition]?.high ?? 0)
        }
        return result
    }

    /// Whether `offset` is the first record of `partition` stamped at or after `time`, judged
    /// by the records at `offset - 1` and `offset`.
    private func verify(_ offset: Int64, for time: Timestamp, in partition: TopicPartition, low: Int64, high: Int64) async throws -> Bool {
        let first = max(low, offset - 1)
        let last = min(offset, high - 1)
        var stamps: [Int64: Int64] = [:]
        let physical = TopicPartition(namespace.physical(partition.topic), partition.partition)
        let consumer = try KafkaConsumer(configuration: readerConfiguration(purpose: "verify"), logger: logger)
        do {
            try await consumer.assign([physical: first])
            let messages = try await consumer.collect(timeout: timeout) { read in read.contains { $0.offset >= last } }
            for message in messages { stamps[message.offset] = message.timestamp }
            await consumer.close()
        } catch {
            await consumer.close()
            throw error
        }
        let wanted = time.millisecondsSinceEpoch
        if offset > low {
            guard let before = stamps[offset - 1], before < wanted else { return false }
        }
        if offset < high {
            guard let at = stamps[offset], at >= wanted else { return false }
        }
        return true
    }

    /// The first offset of `partition` stamped at or after `time`, by reading from its
    /// beginning until one is found (`end` when none is).
    private func scan(_ partition: TopicPartition, from start: Int64, for time: Timestamp, end: Int64) async throws -> Int64 {
        let wanted = time.millisecondsSinceEpoch
        var found: Int64?
        do {
            try await stream([partition: start]) { message in
                if (message.timestamp ?? .min) >= wanted {
                    found = message.offset
                    throw FoundOffset()
                }
            }
        } catch is FoundOffset {}
        return found ?? end
    }

    /// A reader's consumer configuration: no group membership, nothing committed.
    /// The first offset the brokers still hold of a logical partition (its log start, the low
    /// watermark): above 0 only when retention (or delete-records) removed older records. The
    /// first offset a read-committed reader sees can be higher without that, because an aborted
    /// transaction's records and its marker occupy the offsets before it.
    public func logStart(of partition: TopicPartition) async throws -> Int64 {
        let consumer = try KafkaConsumer(configuration: readerConfiguration(purpose: "log-start"), logger: logger)
        do {
            let marks = try await consumer.queryWatermarks(
                TopicPartition(namespace.physical(partition.topic), partition.partition), timeout: timeout)
            await consumer.close()
            return marks.low
        } catch {
            await consumer.close()
            throw error
        }
    }

    func readerConfiguration(purpose: String) -> KafkaConfiguration {
        var configuration = configuration
        configuration["group.id"] = "fleetctl-\(purpose)-\(UUID().uuidString.prefix(8))"
        configuration["enable.partition.eof"] = "false"
        configuration["isolation.level"] = "read_committed"
        configuration["queued.max.messages.kbytes"] = configuration["queued.max.messages.kbytes"] ?? "8192"
        return configuration
    }
}

/// Stops a scan at its first match.
private struct FoundOffset: Error {}

/// "Say so once": the offsets-for-times fallback is noted on standard error once per process.
enum SeekNote {
    private static let said = Mutex(false)

    static func once(_ text: String) {
        let first = said.withLock { said in
            defer { said = true }
            return !said
        }
        if first { FileHandle.standardError.write(Data((text + "\n").utf8)) }
    }
}
