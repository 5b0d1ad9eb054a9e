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
        public var duration: Duration
        /// The part of `duration` spent reading the changelog up to the markers (the rest is
        /// mostly decoding the kept images): tells a slow broker from a slow decode.
        public var readDuration: Duration
    }

    public var consumerConfiguration: KafkaConfiguration
    /// The physical name of `<worker>.state`.
    public var stateTopic: String
    public var timeout: Duration
    /// Most partitions read at once, each by a reader of its own (a thread and a client
    /// prefetching up to `queued.max.messages.kbytes`): what bounds a restore's memory for
    /// reading, besides the kept images themselves.
    public var concurrentReaders: Int
    public var logger: Logger

    public init(
        consumerConfiguration: KafkaConfiguration, stateTopic: String, timeout: Duration = .seconds(300),
        concurrentReaders: Int = 4, logger: Logger
    ) {
        self.consumerConfiguration = consumerConfiguration
        self.stateTopic = stateTopic
        self.timeout = timeout
        self.concurrentReaders = concurrentReaders
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
        let unmarked = Set(partitions).subtracting(markerOffsets.keys)
        guard unmarked.isEmpty else {
            throw RestoreError(description: "restore of \(stateTopic): no restore marker was acknowledged for partitions \(unmarked.sorted())")
        }

        let deadline = ContinuousClock.now.advanced(by: timeout)
        var configuration = consumerConfiguration
        // The reader sets it (off) unless the configuration does; `KafkaPartitionReader.bulkProperties`
        // fill in the other fetch settings `KAFKA_*` variables leave unset.
        configuration["enable.partition.eof"] = nil
        let readers = max(1, concurrentReaders)
        let readerConfiguration = configuration
        let markedAt = markerOffsets
        let collectors = try await withThrowingTaskGroup(of: (Int32, ImageCollector).self) { group in
            var waiting = partitions[...]
            var reading = 0
            var collectors: [Int32: ImageCollector] = [:]
            while true {
                while reading < readers, let partition = waiting.popFirst(), let marker = markedAt[partition] {
                    let collector = ImageCollector(committed: committed[partition])
                    group.addTask { [logger] in
                        let read = try await Self.read(
                            partition, of: stateTopic, until: marker, configuration: readerConfiguration, deadline: deadline,
                            timeout: timeout, logger: logger, into: collector)
                        return (partition, read)
                    }
                    reading += 1
                }
                guard let (partition, collector) = try await group.next() else { return collectors }
                reading -= 1
                collectors[partition] = collector
            }
        }
        let readDuration = ContinuousClock.now - started
        let states = try await Self.decode(collectors)
        let duration = ContinuousClock.now - started
        var restored: [Int32: Restored] = [:]
        for (partition, collector) in collectors {
            restored[partition] = Restored(
                states: states[partition] ?? [:], held: collector.held, logTime: collector.logTime, cut: collector.cut,
                recordsRead: collector.recordsRead, duration: duration, readDuration: readDuration)
        }
        return restored
    }

    /// Reads one changelog partition up to its marker into `collector`, on a reader of its own.
    private static func read(
        _ partition: Int32, of stateTopic: String, until marker: Int64, configuration: KafkaConfiguration,
        deadline: ContinuousClock.Instant, timeout: Duration, logger: Logger, into collector: ImageCollector
    ) async throws -> ImageCollector {
        do {
            return try await KafkaPartitionReader.read(
                TopicPartition(stateTopic, partition), from: KafkaConsumer.beginning, until: marker, configuration: configuration,
                timeout: max(Duration.zero, deadline - ContinuousClock.now), logger: logger, into: collector
            ) { collector, record in
                try collector.read(record, topic: stateTopic)
            }
        } catch is CancellationError {
            throw RestoreError(description: "restore of \(stateTopic) partition \(partition) stopped: the worker is shutting down")
        }
    }

    /// Decodes the kept images of every partition, in chunks spread over the cores (a restore
    /// of several partitions, or of one large one, is bound by decoding once reading is cheap).
    static func decode(_ collectors: [Int32: ImageCollector]) async throws -> [Int32: [String: State]] {
        let chunkSize = 8_192
        // Chunks are slices of the collectors' own dictionaries: no copy of a million entries.
        var chunks: [(partition: Int32, images: Slice<[String: KeptImage]>)] = []
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

    /// A user's last committed image as read: a copy of the image (the only bytes of a record
    /// the restore copies), or the record read by the full reader (JSON envelopes of versions
    /// before binary images).
    public struct KeptImage: Sendable {
        var image: [UInt8]
        /// The record's offset in the changelog partition, for errors.
        public var offset: Int64
        var read: ChangelogRecords.StateImage?

        public func state(as _: State.Type) throws(StateImageError) -> State {
            if let read { return try ChangelogRecords.state(of: read, as: State.self) }
            return try StateCoding.decode(image, as: State.self)
        }
    }

    /// One partition's changelog read in offset order under the restore rule of `Builder`,
    /// keeping images undecoded: `Builder` decides which state records count and keeps the log
    /// time and the cut; the images it would decode are kept here instead, in `held` when the
    /// record carries the wake-up, else in `images` (decoded once read). A user is in one of
    /// the two, by its last committed record.
    ///
    /// Public for a migration's re-key, which moves the same images to new partitions: held
    /// images move as bytes with their wake-ups (the new generation restores them lazily too),
    /// so it holds what a restore holds, not every user's decoded state.
    public struct ImageCollector: Sendable {
        private var rule: Builder
        public private(set) var images: [String: KeptImage] = [:]
        public private(set) var held: [String: HeldStateImage] = [:]
        var recordsRead = 0
        /// The newest image format this build decodes (nil: `State` has no binary image, so
        /// nothing is held). A newer image is decoded at once, failing the restore as it names.
        private let readableFormat: UInt32?

        public init(committed: Int64?) {
            rule = Builder(committed: committed)
            readableFormat = (State.self as? any BinaryStateImage.Type)?.stateImageFormat
        }

        public var logTime: Timestamp? { rule.logTime }
        public var cut: (generation: Int, committedOffset: Int64)? { rule.cut }

        /// Reads one record lent by the restore's reader: a state record costs its key and, when
        /// committed, a copy of its image; anything else is copied and read in full.
        mutating func read(_ record: KafkaRecordView, topic: String) throws {
            try read(
                offset: record.offset, isState: record.header(ChangelogRecords.kindHeader).map { $0.elementsEqual(ChangelogRecords.stateKindBytes) } ?? false,
                key: record.key, value: record.value
            ) { record.message(topic: topic) }
        }

        /// `read` of a record already copied.
        public mutating func read(_ message: KafkaMessage) throws {
            let isState = message.header(ChangelogRecords.kindHeader).map { $0.elementsEqual(ChangelogRecords.stateKindBytes) } ?? false
            try (message.key ?? []).withUnsafeBytes { key in
                try (message.value ?? []).withUnsafeBytes { value in
                    try read(
                        offset: message.offset, isState: isState, key: message.key == nil ? nil : key,
                        value: message.value == nil ? nil : value
                    ) { message }
                }
            }
        }

        private mutating func read(
            offset: Int64, isState: Bool, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer?,
            copied: () -> KafkaMessage
        ) throws {
            recordsRead += 1
            guard isState else {
                rule.apply(try ChangelogRecords.entry(of: copied(), as: State.self))
                return
            }
            if let value, let key, value.first != UInt8(ascii: "{"),
               let peek = ChangelogRecords.peekState(value), peek.format == ChangelogRecords.envelopeFormat {
                guard rule.isCommitted(peek.inputOffset) else { return }
                let user = String(decoding: key, as: UTF8.self)
                let image = Array(value[peek.image])
                if case .recorded(let wakeUp) = peek.wakeUp, let readableFormat,
                   let format = StateImageFormat.leadingFormat(of: image), format <= readableFormat {
                    held[user] = HeldStateImage(image: image, wakeUp: wakeUp)
                    if !images.isEmpty { images[user] = nil }
                } else {
                    keep(KeptImage(image: image, offset: offset, read: nil), for: user)
                }
                return
            }
            // A JSON envelope (before binary images), or one this fast path does not read: the
            // full reader takes it, or names what is wrong with it.
            let image = try ChangelogRecords.stateImage(of: copied())
            guard rule.isCommitted(image.inputOffset) else { return }
            keep(KeptImage(image: [], offset: offset, read: image), for: image.userId)
        }

        private mutating func keep(_ image: KeptImage, for user: String) {
            images[user] = image
            if !held.isEmpty { held[user] = nil }
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
