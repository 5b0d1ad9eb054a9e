import Foundation
public import FleetModel
public import Kafka
public import Logging

/// Rebuilds partitions' user states from `<worker>.state` (DESIGN.md principle 5).
///
/// For each partition it first appends a restore marker and notes the marker's offset, then
/// reads the changelog partition from the beginning up to that offset. Everything an earlier
/// owner wrote was acknowledged (at-least-once) or committed (exactly-once) before the partition
/// was handed over, so it lies before the marker; reading to one's own marker needs no high
/// watermark, which some brokers (the local test broker) report wrong.
///
/// Of the state records read, a user keeps the last one reflecting an input offset below the
/// committed offset; later ones were written by an attempt that never committed and are
/// ignored, because the input they reflect will be processed again.
public struct StateRestorer<State: Codable & Hashable & Sendable>: Sendable {
    /// What one partition's restore yields.
    public struct Restored: Sendable {
        public var states: [String: State]
        public var logTime: Timestamp?
        /// The first cut found: a migration stopped folding this partition at that offset, so
        /// whoever still runs this generation must not fold it.
        public var cut: (generation: Int, committedOffset: Int64)?
        /// Changelog records read (states, positions and markers, valid or not).
        public var recordsRead: Int
        public var duration: Duration
    }

    public var consumerConfiguration: KafkaConfiguration
    /// The physical name of `<worker>.state`.
    public var stateTopic: String
    public var timeout: Duration
    public var logger: Logger

    public init(consumerConfiguration: KafkaConfiguration, stateTopic: String, timeout: Duration = .seconds(300), logger: Logger) {
        self.consumerConfiguration = consumerConfiguration
        self.stateTopic = stateTopic
        self.timeout = timeout
        self.logger = logger
    }

    public struct RestoreError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Restores `committed.keys` (partition → committed input offset; absent means nothing
    /// committed yet, so only what a migration re-keyed into the partition is valid). `markerProducer` must not be
    /// transactional: the marker has to be visible on its own.
    public func restore(
        _ partitions: [Int32], committed: [Int32: Int64], markerProducer: KafkaProducer, nonce: String
    ) async throws -> [Int32: Restored] {
        guard !partitions.isEmpty else { return [:] }
        let started = ContinuousClock.now
        let stateTopic = self.stateTopic
        let timeout = self.timeout
        let markers = partitions.map { ChangelogRecords.marker(nonce: nonce, topic: stateTopic, partition: $0) }
        let reports = try await markerProducer.send(markers)
        var markerOffsets: [Int32: Int64] = [:]
        for report in reports { markerOffsets[report.partition] = report.offset }

        var configuration = consumerConfiguration
        configuration["enable.partition.eof"] = "false"
        let consumer = try KafkaConsumer(configuration: configuration, maxBatchSize: 5000, logger: logger)
        try await consumer.assign(Dictionary(uniqueKeysWithValues: partitions.map {
            (TopicPartition(stateTopic, $0), KafkaConsumer.beginning)
        }))

        var initial: [Int32: Builder] = [:]
        for partition in partitions { initial[partition] = Builder(committed: committed[partition]) }
        let markerOffsetsFound = markerOffsets
        let builders: [Int32: Builder]
        do {
            builders = try await withThrowingTaskGroup(of: [Int32: Builder]?.self) { group in
                group.addTask { [initial] in
                    var builders = initial
                    var remaining = Set(partitions)
                    for try await batch in consumer.batches {
                        for message in batch {
                            guard remaining.contains(message.partition), let marker = markerOffsetsFound[message.partition] else { continue }
                            if message.offset >= marker {
                                remaining.remove(message.partition)
                                continue
                            }
                            builders[message.partition]?.recordsRead += 1
                            builders[message.partition]?.apply(try ChangelogRecords.entry(of: message, as: State.self))
                        }
                        if remaining.isEmpty { return builders }
                    }
                    return nil
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                guard let first else {
                    if Task.isCancelled {
                        throw RestoreError(description: "restore of \(stateTopic) partitions \(partitions.sorted()) stopped: the worker is shutting down")
                    }
                    throw RestoreError(description: "restore of \(stateTopic) partitions \(partitions.sorted()) did not reach its markers within \(timeout)")
                }
                return first
            }
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
        let duration = ContinuousClock.now - started
        return builders.mapValues {
            Restored(states: $0.states, logTime: $0.logTime, cut: $0.cut, recordsRead: $0.recordsRead, duration: duration)
        }
    }

    /// One partition's changelog read in offset order, under the restore rule: per user the
    /// last state below the committed offset, the last such log time, and the first cut. The
    /// one definition of that rule, for restores and for a migration's re-key.
    public struct Builder: Sendable {
        public let committed: Int64?
        public private(set) var states: [String: State] = [:]
        public private(set) var logTime: Timestamp?
        public private(set) var cut: (generation: Int, committedOffset: Int64)?
        var recordsRead = 0

        public init(committed: Int64?) { self.committed = committed }

        public mutating func apply(_ entry: ChangelogRecords.Entry<State>) {
            switch entry {
            case .state(let user, let inputOffset, let state):
                if isCommitted(inputOffset) { states[user] = state }
            case .position(let inputOffset, let time):
                if isCommitted(inputOffset) { logTime = time }
            case .marker:
                break
            case .cut(let generation, let offset):
                if cut == nil { cut = (generation, offset) }
            }
        }

        /// Nothing committed yet counts as offset 0: only records a migration re-keyed into this
        /// generation (input offset -1) are valid then.
        func isCommitted(_ inputOffset: Int64) -> Bool {
            inputOffset < (committed ?? 0)
        }
    }
}
