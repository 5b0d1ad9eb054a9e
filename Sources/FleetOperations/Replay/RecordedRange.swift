import Foundation
public import FleetModel
public import FleetWorkers
public import Kafka

/// What the worker recorded for a replayed range: the records of its output, dead-letter and
/// history topics that the range's steps wrote.
///
/// - An output belongs to the range when the stem of the step that wrote it is the stem of a
///   replayed step: its id's stem (an output id is `<stem>:<index>`, the stem being the step's
///   origin, see `OutputIDs`), or for an output with an id of its own (the sender's attempts,
///   `OutputRecord.hasOwnId`) the stem its `source-step` header names
///   (`PartitionReplay.stem(ofOutput:id:)`).
/// - A dead letter belongs to it when its `source-topic`/`source-partition`/`source-offset`
///   headers name a record of the range.
/// - A history record belongs to it when the input offset its after-image is as of lies in the
///   range (a per-input change's `input_offset`, the last changed offset of a per-unit image).
/// With `user`, only records keyed by that user are kept.
public struct RecordedRange: Sendable {
    public var outputs: [ComparedRecord] = []
    public var history: [ComparedRecord] = []
    /// Where each of `history` belongs, in the same order.
    public var historyPlaces: [ChangelogRecords.HistoryPlace] = []
    /// The recorded output records, first copy of each (topic, id), in the order read.
    public var records: [FleetRecord] = []

    public init(
        outputs messages: [KafkaMessage], deadLetters: [KafkaMessage], history changes: [KafkaMessage],
        range: ReplayRange, stems: Set<String>, topics: WorkerTopics, user: String?
    ) {
        var seen = Set<ComparedRecord.Slot>()
        // An upstream worker's outputs go into whichever generation of the delivery inbox was
        // current; a replay writes them to the generation-1 name. A record carried over from one
        // generation into the next is the same record: the oldest generation's copy, as the
        // worker wrote it, is compared.
        var generationOfSlot: [ComparedRecord.Slot: Int] = [:]
        let ordered = messages.enumerated().sorted {
            (Topics.generationBase(of: $0.element.topic).generation, $0.offset)
                < (Topics.generationBase(of: $1.element.topic).generation, $1.offset)
        }.map(\.element)
        for message in ordered where user == nil || message.key == user.map({ Array($0.utf8) }) {
            guard let value = message.value, let record = try? RecordCodec.decode(value),
                  let stem = PartitionReplay.stem(ofOutput: message, id: record.id), stems.contains(String(stem))
            else { continue }
            let (base, generation) = Topics.generationBase(of: message.topic)
            var compared = ComparedRecord(message, key: record.id)
            compared.topic = base
            if let first = generationOfSlot[compared.slot], first < generation { continue }
            generationOfSlot[compared.slot] = generation
            outputs.append(compared)
            if seen.insert(compared.slot).inserted { records.append(record) }
        }
        for message in deadLetters where user == nil || message.key == user.map({ Array($0.utf8) }) {
            func header(_ name: String) -> String? { message.header(name).map { String(decoding: $0, as: UTF8.self) } }
            guard header(KafkaRecords.Header.sourceTopic) == topics.folded,
                  let partition = header(KafkaRecords.Header.sourcePartition).flatMap({ Int32($0) }), partition == range.partition,
                  let offset = header(KafkaRecords.Header.sourceOffset).flatMap({ Int64($0) }), range.contains(offset)
            else { continue }
            outputs.append(ComparedRecord(message, key: PartitionReplay.deadLetterKey(partition: partition, offset: offset)))
        }
        for message in changes where message.partition == range.partition {
            guard let place = try? ChangelogRecords.historyPlace(of: message),
                  range.contains(place.lastOffset), user == nil || place.userId == user
            else { continue }
            var change = ComparedRecord(message, key: PartitionReplay.historyKey(of: place))
            change.timestamp = nil  // the runtime leaves history timestamps to the producer's clock
            history.append(change)
            historyPlaces.append(place)
        }
    }
}
