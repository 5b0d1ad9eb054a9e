import DeliveryPolicy
import FleetModel
import Kafka
import Logging

/// One folded partition's fold and the part of the open commit unit it wrote: everything a
/// partition needs to fold its records without looking at any other partition, so each
/// partition folds on its own task (`FoldLane`) and partitions fold in parallel.
///
/// A value: the lane's task owns it alone. `seal()` hands over what the unit holds as the
/// records to produce (outputs in folding order, then the changelog states, history images and
/// the position), and starts the next unit, so the fold goes on while the sealed unit commits.
struct PartitionLane<P: UserProcessor>: Sendable {
    /// The lane's fixed surroundings: the same for every lane of a run.
    struct Context: Sendable {
        var processor: P
        var layout: TopicLayout
        var settings: WorkerSettings
        var observer: (any RuntimeObserver)?
        var logger: Logger
    }

    let partition: Int32
    let context: Context
    private(set) var fold: PartitionFold<P>
    /// The next offset to fold; anything below was folded (or is a re-delivered copy).
    private(set) var nextOffset: Int64?
    /// Where records addressed to an inbox go (the registry as the runtime last read it).
    var generations: GenerationMap {
        didSet { destinations = [] }
    }
    /// Each logical topic the processor wrote to, with where its outputs go under `generations`:
    /// routing, the namespace and the inbox check, worked out once per topic instead of once per
    /// output. A processor writes to a handful of topics; past `maxDestinations` (a processor
    /// naming topics from its input) each output is resolved on its own.
    private var destinations: [(topic: String, destination: OutputDestination)] = []
    private static var maxDestinations: Int { 32 }
    /// Inputs of this partition to dead-letter instead of folding (`FoldCore.Quarantine`), as
    /// they were when the lane started: quarantine changes only through a rewind, which starts
    /// new lanes.
    let quarantined: [Int64: FoldCore<P>.Quarantine]
    private var unit = Unit()
    /// Outputs, decisions and deliveries written since the observer was last told.
    private var tally = OutputTally()

    init(
        partition: Int32, fold: PartitionFold<P>, nextOffset: Int64?, context: Context, generations: GenerationMap,
        quarantined: [Int64: FoldCore<P>.Quarantine]
    ) {
        self.partition = partition
        self.fold = fold
        self.nextOffset = nextOffset
        self.context = context
        self.generations = generations
        self.quarantined = quarantined
    }

    /// What one unit of this partition holds until it is sealed.
    private struct Unit {
        /// Outputs and dead letters, in production order, each with the input that caused it.
        var records: [ProducerRecord] = []
        var causes: [InputPosition?] = []
        /// Each user changed in the unit (`LatestState`): its image when the bound check encoded
        /// it, the input offset its state reflects and, with binary images, what its history
        /// image will name. One changelog record per user per unit: the changelog is compacted,
        /// so only the last would survive; so a state's image and its next wake-up (recorded
        /// beside the image, for lazy restore) are computed when the unit is sealed, once per user.
        var states: [String: LatestState] = [:]
        /// The first input offset folded in the unit: the `unit_start` of its history images.
        var unitStart: Int64?
        /// The log time after the unit's last record that moved it, and the users then.
        var position: (inputOffset: Int64, logTime: Timestamp, users: Int)?
        /// Per user, the image last written in this unit: the next change's `before` image
        /// (`FLEET_STATE_IMAGES=json`, which writes a change record per state change).
        var encodedInUnit: [String: [UInt8]] = [:]
        /// The next input offset to commit; nil when the unit consumed nothing.
        var nextInput: Int64?
        var fatal: String?
    }

    /// A user whose state changed in the open unit. Its image (unless folding had to encode it
    /// for the bound check, `LogFolding.Folded.stateImages`) and its wake-up are computed when
    /// the unit is sealed, from the fold's state of the user then: the state after the user's
    /// last change, since every change the fold keeps is a step's change recorded here (a
    /// rejected step is rolled back before it is returned). Not a copy of the state: copying
    /// it at every change, and dropping the copy at the next, cost a retain and a release of
    /// every list and string it holds.
    private struct LatestState {
        var image: [UInt8]?
        var inputOffset: Int64
        /// With binary images: the input offsets that changed the user in the unit and the log
        /// time after the last, for its one history image. One entry per user holds both, so a
        /// change costs one look-up and the seal sorts the users once.
        var history: UnitChanges?

        /// The user changed again in the unit, at input `offset`.
        mutating func change(image: [UInt8]?, at offset: Int64, logTime: Timestamp) {
            self.image = image
            inputOffset = offset
            history?.record(offset, logTime: logTime)
        }
    }

    /// A unit's share of one partition, ready to produce.
    struct Sealed: Sendable {
        var partition: Int32
        var records: [ProducerRecord]
        var causes: [InputPosition?]
        /// The next offset of the folded log to commit; nil when the unit consumed nothing.
        var nextInput: Int64?
        /// Set when a state did not encode: the worker cannot go on.
        var fatal: String?

        var isEmpty: Bool { nextInput == nil && records.isEmpty }
    }

    var nextWakeUp: Timestamp? { fold.nextWakeUp }

    // MARK: Folding

    /// Folds the messages of this partition (physical topic names), skipping re-delivered copies.
    /// Returns how many were folded.
    ///
    /// Specialised for the delivery engine, the fleet's busiest processor: the runtime is
    /// generic over its processor and the processor's module is not visible where the fold is
    /// compiled, so the fold (and `PartitionFold`, inlined into it) ran unspecialised, looking
    /// up generic metadata for every state it touched (~5 % of the worker's CPU). The generic
    /// entry point calls this specialisation when `P` is `DeliveryEngine`: RuntimeBenchmark,
    /// three alternating pairs, 13–15 % less CPU per input, 12–18 % more records/s.
    ///
    /// Takes the batch (`batch` is left empty) and moves each record out of it: iterating it and
    /// then renaming a copy of each record's topic made two copies of every record, each a
    /// retain and a release of its topic, key, value and headers.
    @_specialize(where P == DeliveryEngine)
    mutating func fold(_ batch: inout [KafkaMessage]) -> Int {
        batch.reverseForPopping()
        var count = 0
        let writer = RecordCodec.Writer()  // one writing session for the batch's outputs
        while let message = batch.popLast() {
            if fold(message, writer: writer) { count += 1 }
        }
        tally.report(to: context.observer)
        return count
    }

    /// Folds one record of the folded log; false for a re-delivered copy.
    private mutating func fold(_ physical: consuming KafkaMessage, writer: borrowing RecordCodec.Writer) -> Bool {
        let offset = physical.offset
        if let next = nextOffset, offset < next { return false }
        nextOffset = offset + 1
        unit.nextInput = offset + 1
        // Only what the fold reads, not the whole settings and layout (one retain per string
        // they hold, for every record).
        let limits = context.settings.limits, stateImages = context.settings.stateImages
        let cause = InputPosition(partition: physical.topicPartition, offset: offset)
        var message = consume physical
        // A lane folds one partition of the folded log, whose logical name the layout has.
        message.topic = message.topic == context.layout.foldedTopic
            ? context.layout.topics.log : context.settings.topics.logical(message.topic) ?? message.topic
        if unit.unitStart == nil { unit.unitStart = offset }
        if !quarantined.isEmpty, let quarantine = quarantined[offset] {
            // Its outputs failed to produce again and again: dead-lettered as it is, the fold
            // untouched (as for a record that does not decode), so the partition goes on.
            deadLetter(message, error: quarantine.error, cause: cause, quarantinedAfter: quarantine.attempts)
            return true
        }
        let wakeUp = fold.nextWakeUp
        let logTimeBefore = fold.logTime
        var folded = LogFolding.fold(message, into: &fold, limits: limits, images: stateImages, writer: writer)
        if let error = folded.deadLetter { deadLetter(message, error: error, cause: cause) }
        // Taken, not copied out (a retain and a release of each of the step's lists).
        guard var step = folded.step.take() else { return true }
        for failure in step.undecodable {
            context.logger.error("a timer was dropped: the user's state restored from the changelog does not decode", metadata: [
                "partition": "\(cause.partition)", "user": "\(RecordError.quote(failure.userId))", "error": "\(failure.error)",
            ])
        }
        if let failure = folded.stateEncodingError {
            unit.fatal = unit.fatal ?? failure
            return true
        }
        let timestamp = folded.timestamp
        if let wakeUp, wakeUp <= timestamp {
            context.observer?.timerLateness(seconds: Double(timestamp.millisecondsSinceEpoch - wakeUp.millisecondsSinceEpoch) / 1000)
        }
        emit(&step.outputs, values: &folded.outputValues, origin: folded.origin, originIndex: folded.originIndex,
             recordTimestamp: message.timestamp, cause: cause)

        let logTime = fold.logTime ?? timestamp
        for index in 0..<min(step.changeCount, folded.stateImages.count) {
            let userId = step.changedUser(at: index), image = folded.stateImages[index]
            switch stateImages {
            case .binary:
                // One history image per changed user per unit, written when the unit is sealed.
                if let entry = unit.states.index(forKey: userId) {
                    unit.states.values[entry].change(image: image, at: offset, logTime: logTime)
                } else {
                    var history = UnitChanges(logTime: logTime)
                    history.record(offset, logTime: logTime)
                    unit.states[userId] = LatestState(image: image, inputOffset: offset, history: history)
                }
            case .json:
                unit.states[userId] = LatestState(image: image, inputOffset: offset)
                // What the builds before binary images wrote, so a rollback to them loses nothing:
                // a change record per state change, with its before-image.
                guard let after = image else { continue }  // JSON images are all encoded while folding.
                let before: [UInt8]?
                if let cached = unit.encodedInUnit[userId] {
                    before = cached
                } else {
                    do {
                        before = try step.before(at: index).map { try StateCoding.encode($0, as: .json) }
                    } catch {
                        unit.fatal = unit.fatal ?? "cannot encode the state of user \(userId): \(error)"
                        continue
                    }
                }
                unit.encodedInUnit[userId] = after
                unit.records.append(ChangelogRecords.change(
                    userId: userId, before: before, after: after, input: KafkaRecords.coordinates(message),
                    logTime: logTime, topic: context.layout.historyTopic, partition: partition))
                unit.causes.append(cause)
            }
        }
        if fold.logTime != logTimeBefore, let time = fold.logTime {
            unit.position = (offset, time, fold.userCount)
        }
        return true
    }

    /// Moves the step's outputs, each with its encoded value, into the unit; `outputs` and
    /// `values` are left empty.
    ///
    /// Each output is taken out of the step's list, not read where it lies: read in place, it
    /// was still copied on its way into the unit (a retain of every string it holds) and its
    /// value retained, and the step's list released them all again afterwards (`emit` was ~4 %
    /// of a busy delivery worker's samples, about half of it those copies). Both lists are
    /// reversed in place first (`reverseForPopping()`), so `popLast()` hands them out in order.
    private mutating func emit(
        _ outputs: inout [OutputRecord], values: inout [[UInt8]], origin: SourceCoordinates, originIndex: Int?,
        recordTimestamp: Int64?, cause: InputPosition
    ) {
        // One value per output (`LogFolding.encode`); a surplus on either side is not emitted.
        if outputs.count > values.count { outputs.removeLast(outputs.count - values.count) }
        if values.count > outputs.count { values.removeLast(values.count - outputs.count) }
        outputs.reverseForPopping()
        values.reverseForPopping()
        let observer = context.observer
        var index = 0
        while let output = outputs.popLast(), let value = values.popLast() {
            let destination = destination(of: output.topic)
            tally.count(output, observer: observer)
            if let observer, let arrived = recordTimestamp, case .delivery(let delivery) = output.record,
               Self.isSecurity(delivery.category) {
                let wall = RuntimeClock.wallClock().millisecondsSinceEpoch
                observer.securityDeliveryLatency(seconds: Double(max(0, wall - arrived)) / 1000)
            }
            unit.records.append(LogFolding.producerRecord(
                for: output, value: value, to: destination, index: index, of: origin, originIndex: originIndex))
            unit.causes.append(cause)
            index += 1
        }
    }

    /// Whether `category` is SECURITY in any case, without building an uppercased copy of every
    /// delivery's category.
    private static func isSecurity(_ category: String) -> Bool {
        category.utf8.count == 8 && category.uppercased() == "SECURITY"
    }

    /// Where outputs to the logical `topic` go: records for an inbox go to the generation its
    /// owner currently takes writes in.
    private mutating func destination(of topic: String) -> OutputDestination {
        for known in destinations where known.topic == topic { return known.destination }
        let destination = OutputDestination(generations.route(topic), in: context.settings.topics)
        if destinations.count < Self.maxDestinations { destinations.append((topic, destination)) }
        return destination
    }

    private mutating func deadLetter(_ message: KafkaMessage, error: RecordError, cause: InputPosition, quarantinedAfter: Int? = nil) {
        unit.records.append(DeadLetters.record(
            for: message, error: error, settings: context.settings, observer: context.observer, logger: context.logger,
            quarantinedAfter: quarantinedAfter))
        unit.causes.append(cause)
    }

    // MARK: Sealing

    /// Ends the open unit: its records to produce, in an order fixed by the log alone (outputs
    /// as folded; then the changed users' states and history images, by user id; then the
    /// position), and the offset to commit. The next record folds into a new unit.
    /// Specialised for the delivery engine, as `fold` is.
    @_specialize(where P == DeliveryEngine)
    mutating func seal() -> Sealed {
        var done = Unit()
        swap(&done, &unit)
        let layout = context.layout
        let foldedPartition = TopicPartition(layout.foldedTopic, partition)
        // Taken out of `done`, so that growing them below moves the records instead of copying
        // each one (a second reference would make `reserveCapacity` copy the buffer).
        var records: [ProducerRecord] = []
        var causes: [InputPosition?] = []
        swap(&records, &done.records)
        swap(&causes, &done.causes)
        var fatal = done.fatal
        // The users in id order, as positions in `done.states`: read in place, neither looked up
        // again nor copied out with their states.
        let states = done.states
        let users = states.indices.sorted { states.keys[$0] < states.keys[$1] }
        records.reserveCapacity(records.count + users.count * 2 + 1)
        causes.reserveCapacity(records.capacity)
        // Each user's image, in the order of `users`; nil where it did not encode.
        var images: [[UInt8]?] = []
        images.reserveCapacity(users.count)
        let processor = context.processor, format = context.settings.stateImages
        for user in users {
            let userId = states.keys[user], encoded = states.values[user].image
            // The state is read where it lies in the fold: copied out, it cost a retain and a
            // release of each of its collections per changed user.
            let sealed = fold.withState(of: userId) { state in
                Self.image(of: state, encoded: encoded, processor: processor, as: format)
            }
            let image: [UInt8], wakeUp: ChangelogRecords.WakeUp
            switch sealed {
            case nil:
                // Cannot happen (a changed user's state stays in the fold); refusing the unit is
                // what keeps the changelog from losing the change if it ever did.
                fatal = fatal ?? "the state of user \(userId), changed in the unit, is not in the fold at the seal"
                images.append(nil)
                continue
            case .failure(let error)?:
                fatal = fatal ?? "cannot encode the state of user \(userId): \(error)"
                images.append(nil)
                continue
            case .success(let done)?:
                (image, wakeUp) = done
            }
            images.append(image)
            records.append(ChangelogRecords.state(
                userId: userId, image: image, inputOffset: states.values[user].inputOffset, wakeUp: wakeUp,
                topic: layout.stateTopic, partition: partition))
            causes.append(InputPosition(partition: foldedPartition, offset: states.values[user].inputOffset))
        }
        if let unitStart = done.unitStart {
            for (position, user) in users.enumerated() {
                guard let history = states.values[user].history, let image = images[position], let last = history.offsets.last
                else { continue }
                records.append(ChangelogRecords.historyImage(
                    userId: states.keys[user], after: image, unitStart: unitStart, changed: history.offsets,
                    logTime: history.logTime, inputTopic: layout.topics.log, topic: layout.historyTopic, partition: partition))
                causes.append(InputPosition(partition: foldedPartition, offset: last))
            }
        }
        if let position = done.position {
            records.append(ChangelogRecords.position(
                logTime: position.logTime, inputOffset: position.inputOffset, users: position.users, topic: layout.stateTopic,
                partition: partition))
            causes.append(nil)
        }
        return Sealed(partition: partition, records: records, causes: causes, nextInput: done.nextInput, fatal: fatal)
    }

    /// A changed user's image (`encoded`, when the bound check already encoded it while
    /// folding) and the wake-up recorded beside it.
    private static func image(
        of state: borrowing P.State, encoded: [UInt8]?, processor: P, as format: StateImageEncoding
    ) -> Result<(image: [UInt8], wakeUp: ChangelogRecords.WakeUp), any Error> {
        let wakeUp: ChangelogRecords.WakeUp = P.nextWakeUpDependsOnStateAlone ? .recorded(processor.nextWakeUp(state)) : .unrecorded
        if let encoded { return .success((encoded, wakeUp)) }
        do {
            return .success((try StateCoding.encode(state, as: format), wakeUp))
        } catch {
            return .failure(error)
        }
    }
}
