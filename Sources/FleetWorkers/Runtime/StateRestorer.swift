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
/// Keys first: while reading, a state record costs its key, its input offset
/// (`ChangelogRecords.peekState`) and, when committed, a copy of its image bytes. A superseded
/// image is never decoded (a busy user has many per day).
///
/// Lazy: a user's last committed image whose record carries the state's next wake-up (every
/// record the fold writes since lazy restore) is not decoded at all: it is handed over as a
/// `HeldStateImage`, the timer is scheduled from the recorded wake-up, and `PartitionFold`
/// decodes the image when a record or timer first touches the user. Only last images without a
/// recorded wake-up (JSON envelopes, binary records of builds before, a migration's re-keyed
/// states) or of a format newer than this build reads are decoded here, once the partitions are
/// read, in parallel chunks over every partition restored together; such an image that does not
/// decode fails the restore (a pod of an older build given a partition a newer one wrote waits
/// for the rollout instead of dead-lettering). A held image that does not decode when touched
/// (damaged bytes) stops only its user: see `PartitionFold`.
///
/// Sized: a large partition is first read from a little before its marker for the last
/// position record, whose users count sizes the held images' table (`Sizing`), so a million-user
/// restore does not rehash every key at each doubling of its table.
///
/// Partitions are read concurrently, each by a `KafkaPartitionReader` of its own (at most
/// `concurrentReaders` at once), which lends each record in librdkafka's buffers instead of
/// copying it into a `KafkaMessage`: reading a million-user partition costs the broker's time
/// and a lookup per record, and decoding the kept images is most of a large restore.
public struct StateRestorer<State: Codable & Hashable & Sendable>: Sendable {
    /// What one partition's restore yields.
    public struct Restored: Sendable {
        /// Users whose last image was decoded here (it recorded no wake-up).
        public var states: [String: State]
        /// Users whose last image recorded its wake-up: left undecoded, for `PartitionFold`.
        public var held: [String: HeldStateImage]
        /// Users restored, decoded or held.
        public var userCount: Int { states.count + held.count }
        public var logTime: Timestamp?
        /// The first cut found: a migration stopped folding this partition at that offset, so
        /// whoever still runs this generation must not fold it.
        public var cut: (generation: Int, committedOffset: Int64)?
        /// Changelog records read (states, positions and markers, valid or not).
        public var recordsRead: Int
        /// The users the partition's tables were sized for, from its last position record (nil:
        /// not sized, see `Sizing`).
        public var sizedFor: Int?
        public var duration: Duration
        /// The part of `duration` spent reading the changelog up to the markers (the rest is
        /// mostly decoding the kept images): tells a slow broker from a slow decode.
        public var readDuration: Duration
    }

    /// What reads the changelog partitions (`KafkaChangelogReader` on the brokers).
    public var reader: any ChangelogReading
    /// The physical name of `<worker>.state`.
    public var stateTopic: String
    public var timeout: Duration
    /// Most partitions read at once, each by a reader of its own (a thread and a client
    /// prefetching up to `queued.max.messages.kbytes`): what bounds a restore's memory for
    /// reading, besides the kept images themselves.
    public var concurrentReaders: Int
    /// When a partition is sized up front from its last position record.
    public var sizing: Sizing
    public var logger: Logger

    /// A large partition's restore first reads the last position record before its marker, which
    /// counts the partition's users as of its commit unit, and sizes its tables for them
    /// (`ChangelogImages.reserveCapacity`): growing a table of a million users rehashes every key
    /// at each doubling, a third of such a restore's reading time, and the changelog's offsets
    /// cannot stand in for the count once compaction removed records.
    public struct Sizing: Sendable {
        /// Partitions whose marker lies at least this far from offset 0 are sized; smaller ones
        /// are not worth the second read.
        public var threshold: Int64
        /// How far before its marker the last position record is looked for: a commit unit
        /// writes its users' states, then the position, so the last position is usually the
        /// record just before the marker. None found: the tables grow as they fill.
        public var window: Int64

        public init(threshold: Int64 = 65_536, window: Int64 = 8_192) {
            self.threshold = threshold
            self.window = window
        }
    }

    public init(
        consumerConfiguration: KafkaConfiguration, stateTopic: String, timeout: Duration = .seconds(300),
        concurrentReaders: Int = 4, sizing: Sizing = Sizing(), logger: Logger
    ) {
        self.init(
            reader: KafkaChangelogReader(configuration: consumerConfiguration, logger: logger), stateTopic: stateTopic,
            timeout: timeout, concurrentReaders: concurrentReaders, sizing: sizing, logger: logger)
    }

    public init(
        reader: any ChangelogReading, stateTopic: String, timeout: Duration = .seconds(300),
        concurrentReaders: Int = 4, sizing: Sizing = Sizing(), logger: Logger
    ) {
        self.reader = reader
        self.stateTopic = stateTopic
        self.timeout = timeout
        self.concurrentReaders = concurrentReaders
        self.sizing = sizing
        self.logger = logger
    }

    public struct RestoreError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// Restores `committed.keys` (partition → committed input offset; absent means nothing
    /// committed yet, so only what a migration re-keyed into the partition is valid). `markerProducer` must not be
    /// transactional: the marker has to be visible on its own.
    public func restore(
        _ partitions: [Int32], committed: [Int32: Int64], markerProducer: any LogProducer, nonce: String
    ) async throws -> [Int32: Restored] {
        guard !partitions.isEmpty else { return [:] }
        let started = ContinuousClock.now
        let stateTopic = self.stateTopic
        let timeout = self.timeout
        let markers = partitions.map { ChangelogRecords.marker(nonce: nonce, topic: stateTopic, partition: $0) }
        let reports = try await markerProducer.send(markers)
        var markerOffsets: [Int32: Int64] = [:]
        for report in reports { markerOffsets[report.partition] = report.offset }
        let unmarked = Set(partitions).subtracting(markerOffsets.keys)
        guard unmarked.isEmpty else {
            throw RestoreError(description: "restore of \(stateTopic): no restore marker was acknowledged for partitions \(unmarked.sorted())")
        }

        let deadline = ContinuousClock.now.advanced(by: timeout)
        let readers = max(1, concurrentReaders)
        let reader = self.reader
        let markedAt = markerOffsets
        let sizing = self.sizing
        let collected = try await withThrowingTaskGroup(of: (Int32, ChangelogImages, Int?).self) { group in
            var waiting = partitions[...]
            var reading = 0
            var collected: [Int32: (ChangelogImages, sizedFor: Int?)] = [:]
            while true {
                while reading < readers, let partition = waiting.popFirst(), let marker = markedAt[partition] {
                    let collector = ChangelogImages(committed: committed[partition], decoding: State.self)
                    group.addTask { [logger] in
                        let (read, sizedFor) = try await Self.read(
                            partition, of: stateTopic, until: marker, reader: reader, sizing: sizing,
                            deadline: deadline, timeout: timeout, logger: logger, into: collector)
                        return (partition, read, sizedFor)
                    }
                    reading += 1
                }
                guard let (partition, collector, sizedFor) = try await group.next() else { return collected }
                reading -= 1
                collected[partition] = (collector, sizedFor)
            }
        }
        let collectors = collected.mapValues { $0.0 }
        let readDuration = ContinuousClock.now - started
        let states = try await Self.decode(collectors)
        let duration = ContinuousClock.now - started
        var restored: [Int32: Restored] = [:]
        for (partition, (collector, sizedFor)) in collected {
            restored[partition] = Restored(
                states: states[partition] ?? [:], held: collector.held, logTime: collector.logTime, cut: collector.cut,
                recordsRead: collector.recordsRead, sizedFor: sizedFor, duration: duration, readDuration: readDuration)
        }
        return restored
    }

    /// Reads one changelog partition up to its marker into `collector`, on a reader of its own;
    /// a large partition's held images are sized first from the users its last position record
    /// counted (none found: the tables grow as they fill, as before).
    private static func read(
        _ partition: Int32, of stateTopic: String, until marker: Int64, reader: any ChangelogReading,
        sizing: Sizing, deadline: ContinuousClock.Instant, timeout: Duration, logger: Logger, into collector: ChangelogImages
    ) async throws -> (ChangelogImages, sizedFor: Int?) {
        var collector = collector
        var sizedFor: Int?
        let topicPartition = TopicPartition(stateTopic, partition)
        do {
            if marker >= sizing.threshold {
                let users = try await reader.lastCountedUsers(
                    topicPartition, from: max(0, marker - sizing.window), until: marker,
                    timeout: max(Duration.zero, deadline - ContinuousClock.now))
                // A hint only: bounded by the records there can be.
                if let users, users > 0 {
                    let bounded = min(users, Int(marker))
                    sizedFor = bounded
                    collector.reserveCapacity(users: bounded)
                }
            }
            let read = try await reader.read(
                topicPartition, from: KafkaConsumer.beginning, until: marker,
                timeout: max(Duration.zero, deadline - ContinuousClock.now), into: collector)
            return (read, sizedFor)
        } catch is CancellationError {
            throw RestoreError(description: "restore of \(stateTopic) partition \(partition) stopped: the worker is shutting down")
        }
    }

    /// Decodes the kept images of every partition, in chunks spread over the cores (a restore
    /// of several partitions, or of one large one, is bound by decoding once reading is cheap).
    static func decode(_ collectors: [Int32: ChangelogImages]) async throws -> [Int32: [String: State]] {
        let chunkSize = 8_192
        // Chunks are slices of the collectors' own dictionaries: no copy of a million entries.
        var chunks: [(partition: Int32, images: Slice<[String: KeptStateImage]>)] = []
        for (partition, collector) in collectors {
            let images = collector.images
            var start = images.startIndex
            while start != images.endIndex {
                let end = images.index(start, offsetBy: chunkSize, limitedBy: images.endIndex) ?? images.endIndex
                chunks.append((partition, images[start..<end]))
                start = end
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

    /// One partition's changelog read in offset order, under the restore rule: per user the
    /// last state below the committed offset, the last such log time, and the first cut, with
    /// every state decoded (`ChangelogRule` for all but the states, as `ChangelogImages` reads it).
    public struct Builder: Sendable {
        private var rule: ChangelogRule
        public var committed: Int64? { rule.committed }
        public private(set) var states: [String: State] = [:]
        public var logTime: Timestamp? { rule.logTime }
        public var cut: (generation: Int, committedOffset: Int64)? { rule.cut }

        public init(committed: Int64?) { rule = ChangelogRule(committed: committed) }

        public mutating func apply(_ entry: ChangelogRecords.Entry<State>) {
            switch entry {
            case .state(let user, let inputOffset, let state):
                if rule.isCommitted(inputOffset) { states[user] = state }
            case .position(let inputOffset, let time):
                rule.apply(.position(inputOffset: inputOffset, logTime: time, users: nil))
            case .marker(let nonce):
                rule.apply(.marker(nonce: nonce))
            case .cut(let generation, let offset):
                rule.apply(.cut(generation: generation, committedOffset: offset))
            }
        }
    }
}
