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
///
/// Keys first: while reading, a state record costs its key and its input offset
/// (`ChangelogRecords.peekState`); only each user's last committed image is decoded, once the
/// partitions are read, in parallel chunks over every partition restored together. A
/// superseded image is never decoded (a busy user has many per day).
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
        // A restore reads whole partitions as fast as the broker serves them: fetch large
        // (librdkafka's defaults, 1 MiB a partition per fetch, made a million-user restore
        // wait on round trips). `KAFKA_*` settings win.
        for (property, value) in Self.restoreFetch where configuration[property] == nil {
            configuration[property] = value
        }
        let consumer = try KafkaConsumer(configuration: configuration, maxBatchSize: 20_000, logger: logger)
        try await consumer.assign(Dictionary(uniqueKeysWithValues: partitions.map {
            (TopicPartition(stateTopic, $0), KafkaConsumer.beginning)
        }))

        var initial: [Int32: ImageCollector] = [:]
        for partition in partitions { initial[partition] = ImageCollector(committed: committed[partition]) }
        let markerOffsetsFound = markerOffsets
        let builders: [Int32: ImageCollector]
        do {
            builders = try await withThrowingTaskGroup(of: [Int32: ImageCollector]?.self) { group in
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
                            try builders[message.partition]?.read(message)
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
        let states = try await Self.decode(builders)
        let duration = ContinuousClock.now - started
        var restored: [Int32: Restored] = [:]
        for (partition, builder) in builders {
            restored[partition] = Restored(
                states: states[partition] ?? [:], logTime: builder.logTime, cut: builder.cut,
                recordsRead: builder.recordsRead, duration: duration)
        }
        return restored
    }

    /// Fetch sizes of the restore's reader.
    static var restoreFetch: [String: String] {
        ["max.partition.fetch.bytes": "16777216", "fetch.max.bytes": "67108864", "queued.max.messages.kbytes": "262144"]
    }

    /// Decodes the kept images of every partition, in chunks spread over the cores (a restore
    /// of several partitions, or of one large one, is bound by decoding once reading is cheap).
    static func decode(_ collectors: [Int32: ImageCollector]) async throws -> [Int32: [String: State]] {
        let chunkSize = 8_192
        var chunks: [(partition: Int32, images: ArraySlice<(key: String, value: KeptImage)>)] = []
        for (partition, collector) in collectors {
            let images = Array(collector.images)
            var start = 0
            while start < images.count {
                chunks.append((partition, images[start..<min(start + chunkSize, images.count)]))
                start += chunkSize
            }
        }
        return try await withThrowingTaskGroup(of: (Int32, [(String, State)]).self) { group in
            for chunk in chunks {
                group.addTask {
                    var states: [(String, State)] = []
                    states.reserveCapacity(chunk.images.count)
                    for (user, kept) in chunk.images {
                        do {
                            states.append((user, try kept.state(as: State.self)))
                        } catch {
                            throw RestoreError(description: "partition \(chunk.partition) offset \(kept.offset): the state of user \(RecordError.quote(user)) does not decode: \(error)")
                        }
                    }
                    return (chunk.partition, states)
                }
            }
            var result: [Int32: [String: State]] = [:]
            for (partition, collector) in collectors {
                var states: [String: State] = [:]
                states.reserveCapacity(collector.images.count)
                result[partition] = states
            }
            for try await (partition, states) in group {
                // Each user is in exactly one chunk: plain inserts into storage reserved above.
                for (user, state) in states { result[partition]?[user] = state }
            }
            return result
        }
    }

    /// A user's last committed image as read: the record's value and where the image lies in it,
    /// or the record read by the full reader (JSON envelopes of versions before binary images).
    struct KeptImage: Sendable {
        var value: [UInt8]
        var range: Range<Int>
        /// The record's offset in the changelog partition, for errors.
        var offset: Int64
        var read: ChangelogRecords.StateImage?

        func state(as _: State.Type) throws(StateImageError) -> State {
            if let read { return try ChangelogRecords.state(of: read, as: State.self) }
            return try StateCoding.decode(Array(value[range]), as: State.self)
        }
    }

    /// One partition's changelog read in offset order under the restore rule of `Builder`,
    /// keeping images undecoded: `Builder` decides which state records count and keeps the log
    /// time and the cut; the images it would decode are kept here instead.
    struct ImageCollector: Sendable {
        private var rule: Builder
        var images: [String: KeptImage] = [:]
        var recordsRead = 0

        init(committed: Int64?) { rule = Builder(committed: committed) }

        var logTime: Timestamp? { rule.logTime }
        var cut: (generation: Int, committedOffset: Int64)? { rule.cut }

        mutating func read(_ message: KafkaMessage) throws(ChangelogRecords.ReadError) {
            recordsRead += 1
            let isState = message.headers.first { $0.name == ChangelogRecords.kindHeader }?.value == ChangelogRecords.stateKindBytes
            guard isState else {
                rule.apply(try ChangelogRecords.entry(of: message, as: State.self))
                return
            }
            if let value = message.value, let key = message.key, value.first != UInt8(ascii: "{"),
               let peek = ChangelogRecords.peekState(value), peek.format == ChangelogRecords.envelopeFormat {
                guard rule.isCommitted(peek.inputOffset) else { return }
                images[String(decoding: key, as: UTF8.self)] = KeptImage(
                    value: value, range: peek.image, offset: message.offset, read: nil)
                return
            }
            // A JSON envelope (before binary images), or one this fast path does not read: the
            // full reader takes it, or names what is wrong with it.
            let image = try ChangelogRecords.stateImage(of: message)
            guard rule.isCommitted(image.inputOffset) else { return }
            images[image.userId] = KeptImage(value: [], range: 0..<0, offset: message.offset, read: image)
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
