public import FleetModel
public import Kafka

/// How the runtime folds one record of a worker's folded log and what it writes for it: the
/// single definition shared by `WorkerRuntime` and `fleetctl replay`, so a replay re-runs the
/// log exactly as the worker ran it (DESIGN.md principle 6).
public enum LogFolding {
    /// What folding one message did.
    public struct Folded<State: Codable & Hashable & Sendable>: Sendable {
        /// The fold step; nil when the record did not decode (the fold was not touched, and the
        /// partition's log time did not move).
        public var step: FoldStep<State>?
        /// Why the record goes to `<topic>.dlq`: it did not decode, the processor rejected it,
        /// or its step would have written more than `RecordLimits` allow.
        public var deadLetter: RecordError?
        /// The coordinates its ids derive from (`KafkaRecords.origin(of:)`).
        public var origin: SourceCoordinates
        /// Its position among the outputs of the step that wrote it, for a record a fleet worker wrote.
        public var originIndex: Int?
        /// The time it was folded at: its broker timestamp, else the partition's log time.
        public var timestamp: Timestamp
        /// The encoded value of each of `step.outputs`, in order (checked against the bound).
        public var outputValues: [[UInt8]] = []
        /// The encoded image of each changed user's state after the step (`step.changedUser(at:)`),
        /// in order, where checking the bound took encoding it; nil where it did not
        /// (`StateCoding.imageSizeBound`), and the caller encodes the image when it writes it
        /// (`StateCoding.encode`). A user's state often changes many times in a commit unit, and
        /// only the last image is written.
        public var stateImages: [[UInt8]?] = []
        /// Set when a state did not encode: the worker cannot go on.
        public var stateEncodingError: String?
    }

    /// Folds `message` (with its logical topic name) into `fold`: size and decode checks and
    /// the key check, the broker timestamp (else the log time), and the origin coordinates and
    /// index of a record a fleet worker wrote (`KafkaRecords.origin(of:)`).
    ///
    /// Every output and state image the step would write is encoded here and checked against
    /// `limits` before the caller produces anything (DESIGN.md principle 7): a record whose own
    /// outputs or state would be over a bound is rejected as if its processor had refused it
    /// (`PartitionFold.reject`), with an error naming what and by how much. Since the check is
    /// a function of the log, a re-run, a restore and a replay refuse exactly the same record.
    /// `images` is how the state images are encoded (`FLEET_STATE_IMAGES`); the state bound is
    /// checked on the image as written.
    public static func fold<P: UserProcessor>(
        _ message: KafkaMessage, into fold: inout PartitionFold<P>, limits: RecordLimits = .standard,
        images: StateImageEncoding = .binary
    ) -> Folded<P.State> {
        self.fold(message, into: &fold, limits: limits, images: images, writer: RecordCodec.Writer())
    }

    /// The same, encoding the outputs with `writer`: a caller folding many messages (a lane's
    /// batch) keeps one for all of them, instead of a writing session per message.
    ///
    /// Out of line, as it was before the overload: inlined into a caller it saves nothing
    /// measurable, and `Benchmarks/FoldProfile`'s instruction counts are collected on it.
    @inline(never)
    public static func fold<P: UserProcessor>(
        _ message: KafkaMessage, into fold: inout PartitionFold<P>, limits: RecordLimits = .standard,
        images: StateImageEncoding = .binary, writer: borrowing RecordCodec.Writer
    ) -> Folded<P.State> {
        let timestamp = Timestamp(millisecondsSinceEpoch: message.timestamp ?? fold.logTime?.millisecondsSinceEpoch ?? 0)
        let origin = KafkaRecords.origin(of: message)
        let record: FleetRecord
        do {
            record = try KafkaRecords.decode(message, limits: limits)
        } catch {
            return Folded(step: nil, deadLetter: error, origin: origin.coordinates, originIndex: origin.index, timestamp: timestamp)
        }
        let logTimeBefore = fold.logTime
        var step = fold.apply(record, timestamp: timestamp, coordinates: origin.coordinates, originIndex: origin.index)
        var encoded = encode(&step, of: &fold, limits: limits, images: images, writer: writer)
        if step.deadLetter == nil, let violation = encoded.violation {
            step = fold.reject(
                step, logTimeBefore: logTimeBefore, timestamp: timestamp, coordinates: origin.coordinates,
                originIndex: origin.index, error: RecordError("\(violation); the record is refused so that nothing over the bound is written (RecordLimits)"))
            // What remains are the timers that were due anyway; they were encoded once more.
            encoded = encode(&step, of: &fold, limits: limits, images: images, writer: writer)
        }
        // Built in the return statement: filled in as a local and returned, the whole value
        // (the step's outputs and both states of each change) was copied out and the local
        // destroyed, a retain and a release of everything it holds per record.
        let deadLetter = step.deadLetter
        return Folded(
            step: consume step, deadLetter: deadLetter, origin: origin.coordinates, originIndex: origin.index,
            timestamp: timestamp, outputValues: encoded.outputs, stateImages: encoded.states,
            stateEncodingError: encoded.stateError)
    }

    /// A step's outputs and state images, encoded once for the bound check and for producing.
    private struct Encoded {
        var outputs: [[UInt8]] = []
        var states: [[UInt8]?] = []
        var stateError: String?
        /// The first bound the step breaks, described.
        var violation: String?
    }

    /// Only the record's own outputs and its user's state can make the record refused: timers'
    /// outputs would be written without the record too. Timers are kept under the bounds by
    /// construction (`RecordLimits.stateHeadroom`, the engines' caps); the property tests check
    /// every output and image against the bounds.
    ///
    /// So a state is encoded here only when the check needs its exact size: the record's user's
    /// state without a size bound under the limit. JSON images are all encoded: the worker
    /// writes a change record, with its before-image, per change.
    ///
    /// Each changed user's state is read where it lies in `fold`, which holds it as the step
    /// left it: a fold recording `.users` keeps no copy of it in the step. `step` is `inout` only
    /// so that each output is read where it lies (`RecordCodec.Writer.encode(inPlace:)`).
    private static func encode<P: UserProcessor>(
        _ step: inout FoldStep<P.State>, of fold: inout PartitionFold<P>, limits: RecordLimits, images: StateImageEncoding,
        writer: borrowing RecordCodec.Writer
    ) -> Encoded {
        var encoded = Encoded()
        encoded.outputs.reserveCapacity(step.outputs.count)
        for position in step.outputs.indices {
            let value = writer.encode(inPlace: &step.outputs[position].record)
            if value.count > limits.maxOutputBytes, encoded.violation == nil, step.recordOutputs.contains(position) {
                encoded.violation = "its \(step.outputs[position].record.type) for \(step.outputs[position].topic) would be \(value.count) bytes, over the output limit of \(limits.maxOutputBytes) (FLEET_MAX_OUTPUT_BYTES)"
            }
            encoded.outputs.append(value)
        }
        encoded.states.reserveCapacity(step.changeCount)
        let allowed = limits.maxStateBytes - limits.stateHeadroom
        let recordUser = step.recordUser
        for index in 0..<step.changeCount {
            let userId = step.changedUser(at: index)
            if images == .binary, userId != recordUser {
                encoded.states.append(nil)
                continue
            }
            let checked = fold.withState(of: userId) { state in
                checkedImage(of: state, images: images, allowed: allowed)
            }
            switch checked {
            case nil:
                // Cannot happen: a changed user's state stays in the fold.
                encoded.stateError = encoded.stateError ?? "the state of user \(userId), changed by the step, is not in the fold"
                encoded.states.append(nil)
            case .failure(let error)?:
                encoded.stateError = encoded.stateError ?? "cannot encode the state of user \(userId): \(error)"
                encoded.states.append(nil)
            case .success(let image)?:
                if let image, image.count > allowed, encoded.violation == nil, userId == recordUser {
                    encoded.violation = "the state of user \(RecordError.quote(userId)) would be \(image.count) bytes, over the \(allowed) a record may leave (state limit \(limits.maxStateBytes), FLEET_MAX_STATE_BYTES, less 1/16 for timers)"
                }
                encoded.states.append(image)
            }
        }
        return encoded
    }

    /// `state`'s image, or nil for a binary image whose size bound is within `allowed` (it is
    /// encoded when it is written).
    private static func checkedImage<State: Encodable>(
        of state: borrowing State, images: StateImageEncoding, allowed: Int
    ) -> Result<[UInt8]?, any Error> {
        if images == .binary, let bound = StateCoding.imageSizeBound(of: state, as: images), bound <= allowed {
            return .success(nil)
        }
        do {
            return .success(try StateCoding.encode(state, as: images))
        } catch {
            return .failure(error)
        }
    }

    /// The Kafka record for the `index`-th output of the step at `origin` (with `originIndex`,
    /// the origin's position among its own step's outputs, for a record a fleet worker wrote):
    /// - an output for a fleet inbox carries its provenance (see
    ///   `KafkaRecords.producerRecord(_:value:physicalTopic:from:index:)`);
    /// - an output with an id of its own (`OutputRecord.hasOwnId`) names its step in a
    ///   `source-step` header, since its id does not. Only those pay for the header: every other
    ///   output's bytes are as before.
    public static func producerRecord(
        for output: OutputRecord, index: Int, of origin: SourceCoordinates, originIndex: Int?, in namespace: TopicNamespace
    ) -> ProducerRecord {
        producerRecord(for: output, value: RecordCodec.encode(output.record), index: index, of: origin, originIndex: originIndex, in: namespace)
    }

    /// The same, with the value already encoded (`Folded.outputValues`).
    public static func producerRecord(
        for output: OutputRecord, value: [UInt8], index: Int, of origin: SourceCoordinates, originIndex: Int?,
        in namespace: TopicNamespace
    ) -> ProducerRecord {
        producerRecord(
            for: output, value: value, to: OutputDestination(output.topic, in: namespace), index: index, of: origin,
            originIndex: originIndex)
    }

    /// The same, to `destination`, the output's topic already resolved: the runtime resolves
    /// each topic once per lane instead of once per output.
    public static func producerRecord(
        for output: borrowing OutputRecord, value: consuming [UInt8], to destination: OutputDestination, index: Int,
        of origin: SourceCoordinates, originIndex: Int?
    ) -> ProducerRecord {
        var record = destination.isInbox
            ? KafkaRecords.producerRecord(output, value: value, physicalTopic: destination.physicalTopic, from: origin, index: index)
            : KafkaRecords.producerRecord(output, value: value, physicalTopic: destination.physicalTopic)
        if output.hasOwnId {
            record.headers.append(KafkaHeader(
                KafkaRecords.Header.sourceStep, OutputIDs(origin: origin, originIndex: originIndex).stem))
        }
        return record
    }
}

/// Where the outputs written to one logical topic go: the physical topic, and whether it is a
/// fleet inbox (whose records carry their provenance, `KafkaRecords.producerRecord(_:value:physicalTopic:from:index:)`).
public struct OutputDestination: Sendable {
    public var physicalTopic: String
    public var isInbox: Bool

    /// `topic`'s destination in `namespace`; `topic` is already routed to its generation.
    public init(_ topic: String, in namespace: TopicNamespace) {
        self.physicalTopic = namespace.physical(topic)
        self.isInbox = KafkaRecords.isInbox(topic)
    }
}
