/// A record a processor emits, with the topic it goes to. Keyed by `record.userId`.
public struct OutputRecord: Hashable, Sendable {
    public var topic: String
    public var timestamp: Timestamp
    public var record: FleetRecord
    /// Whether `record.id` is not one of its step's ids (`ProcessingContext.nextID()`) but
    /// derived otherwise, e.g. the sender's attempt ids from the delivery id, which the
    /// providers' idempotency needs. Such an id does not say which step wrote the record, so
    /// the runtime names the step in a `source-step` header (`KafkaRecords.Header.sourceStep`),
    /// by which replay tells the records of a replayed range.
    public var hasOwnId: Bool

    /// `@inlinable`: every emitted record is wrapped in one; see `Delivery.init`.
    @inlinable
    public init(topic: String, timestamp: Timestamp, record: FleetRecord, hasOwnId: Bool = false) {
        self.topic = topic; self.timestamp = timestamp; self.record = record; self.hasOwnId = hasOwnId
    }

    public var key: String { record.userId }
}

/// Hands out the ids of the records one log position produces: `topic:partition:offset:index`.
///
/// Every output id is a function of the log coordinates of the record that caused it (or, for
/// timers, of the record whose time made them due), so a re-run yields the same ids (P-IDEM-1,
/// crash equivalence).
///
/// A record that one fleet worker wrote into another's inbox is identified by where it came
/// from, not by where it landed: the inbox offset of a forwarded or upstream record depends on
/// how its writers interleaved and on copies a crashed writer re-sent, while its origin does not.
/// Such a record's ids are `topic:partition:offset:originIndex:index`: the coordinates of the
/// record that caused it upstream, and its position among that record's outputs
/// (`originIndex`), so sibling intents of one upstream record never share an id.
public struct OutputIDs: Hashable, Sendable {
    public let origin: SourceCoordinates
    /// The record's position among its upstream step's outputs, for records written by a fleet
    /// worker; nil for records read where they were first written.
    public let originIndex: Int?
    public private(set) var nextIndex: Int

    public init(origin: SourceCoordinates, originIndex: Int? = nil, startingAt index: Int = 0) {
        self.origin = origin
        self.originIndex = originIndex
        self.nextIndex = index
    }

    /// What every id handed out here starts with, before its final `:<index>`: the step's
    /// origin (and origin index). Replay and explain find a step's outputs by it.
    public var stem: String {
        var first = OutputIDs(origin: origin, originIndex: originIndex)
        return String(first.next().dropLast(2))  // the first id ends in ":0"
    }

    public mutating func next() -> String {
        defer { nextIndex += 1 }
        if let originIndex {
            return Self.id(
                topic: origin.topic, partition: Int64(origin.partition), offset: origin.offset, index: Int64(originIndex),
                then: Int64(nextIndex))
        }
        return Self.id(topic: origin.topic, partition: Int64(origin.partition), offset: origin.offset, index: Int64(nextIndex))
    }

    /// `topic:partition:offset:index`, and `:last` after it when there is one, exactly as string
    /// interpolation writes it.
    ///
    /// Why by hand: every output record of every worker takes an id, and interpolation (or
    /// `+=`) costs several hundred instructions per piece plus a reallocation or two; writing
    /// the UTF-8 bytes straight into a new string of the exact length costs one allocation (and
    /// one for an inbox record's five-part id, which was made as a four-part stem and then the
    /// id: two strings, each allocated and checked as UTF-8). Each number's length is counted
    /// once, before the string is made.
    ///
    /// Inlined so that each caller's `last` (none, for the ids of records read where they were
    /// first written) is a constant there.
    @inline(__always)
    static func id(topic: String, partition: Int64, offset: Int64, index: Int64, then last: Int64? = nil) -> String {
        let lengths = (
            partition: decimalLength(partition), offset: decimalLength(offset), index: decimalLength(index),
            last: last.map(decimalLength) ?? 0)
        return topic.withUTF8Bytes { topicBytes in
            let length = topicBytes.count + lengths.partition + lengths.offset + lengths.index + lengths.last
            return String(unsafeUninitializedCapacity: length) { buffer in
                var end = buffer.initialize(fromContentsOf: topicBytes)
                end = writeDecimal(partition, length: lengths.partition, into: buffer, at: end)
                end = writeDecimal(offset, length: lengths.offset, into: buffer, at: end)
                end = writeDecimal(index, length: lengths.index, into: buffer, at: end)
                guard let last else { return end }
                return writeDecimal(last, length: lengths.last, into: buffer, at: end)
            }
        }
    }

    /// The bytes `writeDecimal` writes for `value`: the ":", a sign, the digits.
    private static func decimalLength(_ value: Int64) -> Int {
        var magnitude = value.magnitude
        var digits = 1
        while magnitude >= 10 {
            magnitude /= 10
            digits += 1
        }
        return (value < 0 ? 2 : 1) + digits
    }

    /// Writes ":" and `value` in decimal at `start`, `length` bytes (its `decimalLength`);
    /// returns the index after it.
    private static func writeDecimal(_ value: Int64, length: Int, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        buffer[start] = UInt8(ascii: ":")
        if value < 0 { buffer[start + 1] = UInt8(ascii: "-") }
        let end = start + length
        // Digits from the least significant, written from the end backwards.
        var magnitude = value.magnitude
        var position = end
        repeat {
            position -= 1
            let (quotient, digit) = magnitude.quotientAndRemainder(dividingBy: 10)
            buffer[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: digit)
            magnitude = quotient
        } while magnitude > 0
        return end
    }
}

/// What one processing step sees and produces: the log time, the user, fresh output ids and the
/// outputs so far. Passed `inout` so a step can only add to it.
public struct ProcessingContext: Sendable {
    /// The partition's log time (DESIGN.md "Time"): never a wall clock.
    public let now: Timestamp
    public let userId: String
    public var ids: OutputIDs
    public private(set) var outputs: [OutputRecord] = []

    public init(now: Timestamp, userId: String, ids: OutputIDs) {
        self.now = now; self.userId = userId; self.ids = ids
    }

    public mutating func nextID() -> String { ids.next() }

    /// The outputs, moved out (`outputs` is left empty), so the fold's step that takes them owns
    /// the list and its outputs alone and can move them on (`FoldStep.take`) instead of copying.
    @usableFromInline
    mutating func takeOutputs() -> [OutputRecord] {
        var taken: [OutputRecord] = []
        swap(&taken, &outputs)
        return taken
    }

    /// Emits `record` to `topic`, stamped with the log time. `hasOwnId`: the record's id was
    /// not taken from `nextID()` (see `OutputRecord.hasOwnId`).
    ///
    /// `record` is taken `consuming`: callers build it in place, and a borrowed argument made
    /// every emit copy the record (a retain of each of its strings) and then destroy the
    /// caller's temporary (their release).
    public mutating func emit(_ record: consuming FleetRecord, to topic: String, hasOwnId: Bool = false) {
        // Room for a typical step's outputs at once (a decision, a delivery or section item, an
        // event or two): growing one by one reallocated and moved the array at every doubling.
        if outputs.isEmpty { outputs.reserveCapacity(4) }
        outputs.append(OutputRecord(topic: topic, timestamp: now, record: record, hasOwnId: hasOwnId))
    }
}

/// The shape of every worker's decision logic (DESIGN.md principle 1): per-user state folded
/// over input records and timers, with no clock and no I/O. The runtime, the simulator and
/// replay all drive the same processors.
public protocol UserProcessor: Sendable {
    associatedtype State: Codable & Hashable & Sendable

    /// The state of a user never seen before.
    func initialState(userId: String) -> State

    /// Applies one input record. Throws (leaving `state` untouched) when the record breaks a rule
    /// of this processor, e.g. an unknown notification type; the runtime dead-letters it.
    func process(_ record: FleetRecord, state: inout State, context: inout ProcessingContext) throws(RecordError)

    /// Fires every timer of this user that is due at `context.now`, in time order.
    func fireTimers(state: inout State, context: inout ProcessingContext)

    /// The earliest time a timer of this user is due, if any.
    func nextWakeUp(_ state: State) -> Timestamp?

    /// Whether `nextWakeUp` is a function of the state alone, never of the processor's
    /// configuration. Then the runtime records it beside each changelog image, and a restore
    /// schedules the user's timer from the recorded value without decoding the image until the
    /// user is touched (lazy restore: `PartitionFold`, `HeldStateImage`). A processor whose
    /// wake-ups depend on settings a deploy may change leaves it false (the default), so a
    /// restore always asks the running build. A change to `nextWakeUp`'s own logic reaches a
    /// held user when a record or timer first touches it.
    static var nextWakeUpDependsOnStateAlone: Bool { get }
}

extension UserProcessor {
    public static var nextWakeUpDependsOnStateAlone: Bool { false }
}
