import DeliveryPolicy
import DeliveryWorkload
import FleetModel
import FleetWorkers
import Foundation
import Kafka
import Logging

/// Issue #13's restore figure: one partition's changelog holding `users` users (half of them
/// with an older, superseded image before their last one), restored by `StateRestorer` and
/// handed to a `PartitionFold` (timers scheduled), once per `Variant`: the JSON images the build
/// before binary images wrote (`FLEET_STATE_IMAGES=json`), binary images without a recorded
/// wake-up (what the build before lazy restore wrote: every last image decoded at restore), and
/// binary images with their wake-ups (today's records: held undecoded).
///
/// The states are real: the delivery engine's states after folding the benchmark's inbox
/// records, repeated over the user ids (a state's image does not depend on its user's id).
enum SinglePartitionRestore {
    /// How the changelog's state records are written.
    enum Variant: String, CaseIterable {
        case json
        /// Binary images, no wake-up recorded (the build before lazy restore).
        case binaryEager = "binary-eager"
        /// Binary images with their wake-ups (this build).
        case binary

        var encoding: StateImageEncoding { self == .json ? .json : .binary }
    }

    struct Result {
        var variant: Variant
        var users: Int
        var records: Int
        var bytes: Int
        var seconds: Double
        /// The part of `seconds` spent reading the changelog (the rest: decoding kept images).
        var readSeconds: Double
        var cpuSeconds: Double
        /// The part of `seconds` spent building the partition's fold (its timer schedule).
        var foldSeconds: Double
        /// States decoded at restore (the rest held as images).
        var decoded: Int
        /// The users the restore sized its tables for (`StateRestorer.Sizing`).
        var sizedFor: Int?
        /// Resident bytes the process grew by over the restore, per user (states or held images,
        /// timers; an upper bound, see `residentBytes`).
        var heapBytesPerUser: Double
        /// The same records read as the restore before issue 13 read them: every record decoded
        /// (`ChangelogRecords.entry`), into `StateRestorer.Builder`.
        var everyRecordSeconds: Double
        /// The same partition read by `KafkaPartitionReader` doing nothing with a record (the
        /// floor of a restore's read), and doing only what a restore does before it keeps an
        /// image (kind header, `peekState`): what the rest of `readSeconds` is spent on.
        var floor: ReadFloor?
        var statesPerSecond: Double { Double(users) / seconds }

        func printed() {
            print(String(
                format: "RESULT restore_1p images=%@ users=%d decoded=%d sized_for=%d changelog_records=%d bytes_per_record=%.1f secs=%.3f read_secs=%.3f fold_secs=%.3f states_per_s=%.0f cpu_secs=%.2f rss_growth_bytes_per_user=%.0f every_record_reader_secs=%.3f every_record_reader_states_per_s=%.0f",
                variant.rawValue, users, decoded, sizedFor ?? -1, records, Double(bytes) / Double(records), seconds, readSeconds,
                foldSeconds, statesPerSecond, cpuSeconds, heapBytesPerUser, everyRecordSeconds, Double(users) / everyRecordSeconds))
            if let floor {
                print(String(
                    format: "RESULT restore_1p_read_floor images=%@ records=%d count_only_secs=%.3f count_only_records_per_s=%.0f header_and_peek_secs=%.3f",
                    variant.rawValue, records, floor.countSeconds, Double(records) / floor.countSeconds, floor.peekSeconds))
            }
        }
    }

    struct ReadFloor {
        var countSeconds: Double
        var peekSeconds: Double
    }

    /// Reads `topic`'s partition 0 up to `end` twice with the restore's reader: counting records,
    /// then looking at each record's kind header and peeking its state envelope.
    /// `binary`: whether the state records are binary envelopes, which the peek reads (a JSON
    /// image's record is not one, so the peek finds no state there and the restore decodes it).
    static func readFloor(
        topic: String, end: Int64, binary: Bool, brokers: String, namespace: TopicNamespace, logger: Logger
    ) async throws -> ReadFloor {
        let configuration = KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "group.id": namespace.prefix + "restore-bench-floor",
        ])
        var started = ContinuousClock.now
        let counted = try await KafkaPartitionReader.read(
            TopicPartition(topic, 0), from: KafkaConsumer.beginning, until: end, configuration: configuration, timeout: .seconds(600),
            logger: logger, into: 0
        ) { count, _ in count += 1 }
        let countSeconds = (ContinuousClock.now - started).seconds
        started = ContinuousClock.now
        let peeked = try await KafkaPartitionReader.read(
            TopicPartition(topic, 0), from: KafkaConsumer.beginning, until: end, configuration: configuration, timeout: .seconds(600),
            logger: logger, into: 0
        ) { count, record in
            if record.header(ChangelogRecords.kindHeader) != nil, let value = record.value, ChangelogRecords.peekState(value) != nil {
                count += 1
            }
        }
        let peekSeconds = (ContinuousClock.now - started).seconds
        guard Int64(counted) == end, peeked > 0 || !binary else {
            throw BenchmarkOptions.Invalid(description: "the floor reads saw \(counted) records (\(peeked) states) of \(end)")
        }
        return ReadFloor(countSeconds: countSeconds, peekSeconds: peekSeconds)
    }

    /// Up to `limit` distinct states the engine reaches on `inbox`.
    static func statePool(_ inbox: [ProducerRecord], limit: Int = 5_000) throws -> [DeliveryState] {
        var fold = PartitionFold(processor: DeliveryEngine(profile: try PolicyProfile.shipped("rin")))
        for (offset, record) in inbox.prefix(60_000).enumerated() {
            let message = KafkaMessage(
                topic: Topics.deliveryInbox, partition: 0, offset: Int64(offset), key: record.key, value: record.value,
                headers: record.headers, timestamp: record.timestamp, timestampType: .createTime)
            _ = LogFolding.fold(message, into: &fold)
        }
        return Array(fold.states.sorted { $0.key < $1.key }.map(\.value).prefix(limit))
    }

    static func run(
        users: Int, variant: Variant, sized: Bool = true, pool: [DeliveryState], engine: DeliveryEngine, brokers: String,
        namespace: TopicNamespace, admin: KafkaAdmin, logger: Logger
    ) async throws -> Result {
        let encoding = variant.encoding
        let topic = namespace.physical("restore-bench-\(variant.rawValue)\(sized ? "" : "-unsized").state")
        try await admin.createTopics([NewTopic(name: topic, partitions: 1)])
        defer { Task { try? await admin.deleteTopics([topic]) } }
        let images = try pool.map { try StateCoding.encode($0, as: encoding) }
        let wakeUps: [ChangelogRecords.WakeUp] = pool.map { variant == .binary ? .recorded(engine.nextWakeUp($0)) : .unrecorded }
        let producer = try KafkaProducer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "linger.ms": "20", "batch.num.messages": "10000",
        ]), logger: Logger(label: "runtime-benchmark"))
        // Superseded images first (every other user), then every user's last one.
        var records = 0
        var bytes = 0
        func send(_ range: Range<Int>, step: Int, salt: Int) async throws {
            var start = range.lowerBound
            while start < range.upperBound {
                let end = min(start + 50_000, range.upperBound)
                let batch = stride(from: start, to: end, by: step).map { user in
                    ChangelogRecords.state(
                        userId: "user-\(user)", image: images[(user + salt) % images.count],
                        inputOffset: ChangelogRecords.migratedInputOffset, wakeUp: wakeUps[(user + salt) % images.count],
                        topic: topic, partition: 0)
                }
                for record in batch {
                    bytes += (record.key?.count ?? 0) + (record.value?.count ?? 0)
                        + record.headers.reduce(0) { $0 + $1.name.utf8.count + ($1.value?.count ?? 0) }
                }
                records += batch.count
                _ = try await producer.send(batch)
                start = end
            }
        }
        try await send(0..<users, step: 2, salt: 7)
        try await send(0..<users, step: 1, salt: 0)
        // The last commit unit's position, counting the partition's users, as the runtime writes it.
        let position = ChangelogRecords.position(
            logTime: Timestamp(millisecondsSinceEpoch: 1_795_000_000_000), inputOffset: ChangelogRecords.migratedInputOffset,
            users: users, topic: topic, partition: 0)
        _ = try await producer.send([position])
        records += 1

        let restorer = StateRestorer<DeliveryState>(
            consumerConfiguration: KafkaConfiguration(properties: [
                "bootstrap.servers": brokers, "group.id": namespace.prefix + "restore-bench",
            ]),
            stateTopic: topic, timeout: .seconds(600), sizing: sized ? .init() : .init(threshold: .max), logger: logger)
        let heapBefore = residentBytes()
        let started = ContinuousClock.now
        let cpuStarted = processCPUSeconds()
        let restored = try await restorer.restore([0], committed: [:], markerProducer: producer, nonce: "bench-\(variant.rawValue)")
        guard let partition = restored[0] else { throw BenchmarkOptions.Invalid(description: "partition 0 was not restored") }
        // What the runtime does next (`FoldCore.finishRestore`): the fold, with its timer schedule.
        let foldStarted = ContinuousClock.now
        let fold = PartitionFold(
            processor: engine, restoring: partition.states, holding: partition.held,
            decode: { image throws(StateImageError) in try StateCoding.decode(image, as: DeliveryState.self) },
            logTime: partition.logTime)
        let foldSeconds = (ContinuousClock.now - foldStarted).seconds
        let seconds = (ContinuousClock.now - started).seconds
        let cpuSeconds = processCPUSeconds() - cpuStarted
        await producer.close()
        let states = fold.userCount
        let readSeconds = partition.readDuration.seconds
        let heapBytesPerUser = Double(residentBytes() - heapBefore) / Double(max(states, 1))
        guard states == users else {
            throw BenchmarkOptions.Invalid(description: "restored \(states) of \(users) users from \(topic)")
        }

        let floor = ProcessInfo.processInfo.environment["READ_FLOOR"] == "0" ? nil
            : try await readFloor(
                topic: topic, end: Int64(records), binary: encoding == .binary, brokers: brokers, namespace: namespace, logger: logger)

        // The reader before issue 13: one consumer, every record decoded in full.
        guard ProcessInfo.processInfo.environment["EVERY_RECORD"] != "0" else {
            return Result(
                variant: variant, users: users, records: records, bytes: bytes, seconds: seconds, readSeconds: readSeconds,
                cpuSeconds: cpuSeconds, foldSeconds: foldSeconds, decoded: partition.states.count, sizedFor: partition.sizedFor, heapBytesPerUser: heapBytesPerUser,
                everyRecordSeconds: .nan, floor: floor)
        }
        let consumer = try KafkaConsumer(configuration: KafkaConfiguration(properties: [
            "bootstrap.servers": brokers, "group.id": namespace.prefix + "restore-bench-old", "enable.partition.eof": "false",
        ]), maxBatchSize: 5000, logger: Logger(label: "runtime-benchmark"))
        try await consumer.assign([TopicPartition(topic, 0): KafkaConsumer.beginning])
        let oldStarted = ContinuousClock.now
        var builder = StateRestorer<DeliveryState>.Builder(committed: nil)
        var read = 0
        readAll: for try await batch in consumer.batches {
            for message in batch {
                builder.apply(try ChangelogRecords.entry(of: message, as: DeliveryState.self))
                read += 1
                if read == records { break readAll }
            }
        }
        let everyRecordSeconds = (ContinuousClock.now - oldStarted).seconds
        await consumer.close()
        guard builder.states.count == users else {
            throw BenchmarkOptions.Invalid(description: "the every-record reader found \(builder.states.count) of \(users) users")
        }
        return Result(
            variant: variant, users: users, records: records, bytes: bytes, seconds: seconds, readSeconds: readSeconds,
            cpuSeconds: cpuSeconds, foldSeconds: foldSeconds, decoded: partition.states.count, sizedFor: partition.sizedFor, heapBytesPerUser: heapBytesPerUser, everyRecordSeconds: everyRecordSeconds,
            floor: floor)
    }
}
