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
        /// Why the record goes to `<topic>.dlq`: it did not decode, or the processor rejected it.
        public var deadLetter: RecordError?
        /// The coordinates its ids derive from (`KafkaRecords.origin(of:)`).
        public var origin: SourceCoordinates
        /// Its position among the outputs of the step that wrote it, for a record a fleet worker wrote.
        public var originIndex: Int?
        /// The time it was folded at: its broker timestamp, else the partition's log time.
        public var timestamp: Timestamp
    }

    /// Folds `message` (with its logical topic name) into `fold`: decode and key check, the
    /// broker timestamp (else the log time), and the origin coordinates and index of a record a
    /// fleet worker wrote (`KafkaRecords.origin(of:)`).
    public static func fold<P: UserProcessor>(_ message: KafkaMessage, into fold: inout PartitionFold<P>) -> Folded<P.State> {
        let timestamp = Timestamp(millisecondsSinceEpoch: message.timestamp ?? fold.logTime?.millisecondsSinceEpoch ?? 0)
        let origin = KafkaRecords.origin(of: message)
        let record: FleetRecord
        do {
            record = try KafkaRecords.decode(message)
        } catch {
            return Folded(step: nil, deadLetter: error, origin: origin.coordinates, originIndex: origin.index, timestamp: timestamp)
        }
        let step = fold.apply(record, timestamp: timestamp, coordinates: origin.coordinates, originIndex: origin.index)
        return Folded(step: step, deadLetter: step.deadLetter, origin: origin.coordinates, originIndex: origin.index, timestamp: timestamp)
    }

    /// The Kafka record for the `index`-th output of the step at `origin`: an output for a fleet
    /// inbox carries its provenance (see `KafkaRecords.producerRecord(_:from:index:in:)`).
    public static func producerRecord(
        for output: OutputRecord, index: Int, of origin: SourceCoordinates, in namespace: TopicNamespace
    ) -> ProducerRecord {
        if KafkaRecords.isInbox(output.topic) {
            return KafkaRecords.producerRecord(output, from: origin, index: index, in: namespace)
        }
        return KafkaRecords.producerRecord(output, in: namespace)
    }
}
