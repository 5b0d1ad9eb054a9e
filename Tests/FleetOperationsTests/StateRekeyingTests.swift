import FleetModel
import FleetOperations
import FleetWorkers
import Foundation
import Kafka
import Testing

/// The pure part of `fleetctl partitions migrate`: which states a migration carries into the new
/// generation, where they land, and which history it copies. The same rule as a restore
/// (`StateRestorer`): a user's state is the last one below the committed offset.
struct StateRekeyingTests {
    struct Counter: Codable, Hashable, Sendable { var n: Int }

    static let stateTopic = "delivery-worker.state"

    /// A changelog partition as the runtime writes it.
    struct Changelog {
        var messages: [KafkaMessage] = []
        var offsets: [Int32: Int64] = [:]

        mutating func append(_ record: ProducerRecord, partition: Int32) {
            let offset = offsets[partition, default: 0]
            offsets[partition] = offset + 1
            messages.append(KafkaMessage(
                topic: StateRekeyingTests.stateTopic, partition: partition, offset: offset, key: record.key, value: record.value,
                headers: record.headers, timestamp: nil, timestampType: nil))
        }

        mutating func state(_ user: String, _ n: Int, input: Int64, partition: Int32) throws {
            append(ChangelogRecords.state(
                userId: user, image: try StateCoding.encode(Counter(n: n)), inputOffset: input,
                topic: StateRekeyingTests.stateTopic, partition: partition), partition: partition)
        }

        mutating func position(_ time: String, input: Int64, partition: Int32) {
            append(ChangelogRecords.position(
                logTime: Timestamp(rfc3339: time) ?? Timestamp(millisecondsSinceEpoch: 0), inputOffset: input,
                topic: StateRekeyingTests.stateTopic, partition: partition), partition: partition)
        }

        mutating func cut(generation: Int, at offset: Int64, partition: Int32) {
            append(ChangelogRecords.cut(
                generation: generation, committedOffset: offset, topic: StateRekeyingTests.stateTopic, partition: partition),
                partition: partition)
        }
    }

    @Test("the first cut of the generation counts; cuts of other generations do not")
    func firstCutWins() {
        var log = Changelog()
        log.cut(generation: 2, at: 10, partition: 0)
        log.cut(generation: 2, at: 14, partition: 0)  // a later owner's, after carrying over
        log.cut(generation: 3, at: 20, partition: 1)
        #expect(StateRekeying.cuts(in: log.messages, generation: 2) == [0: 10])
        #expect(StateRekeying.cuts(in: log.messages, generation: 3) == [1: 20])
    }

    @Test("a user's state is the last one below the cut; later attempts and the log time beyond it are ignored")
    func committedStatesAtTheCut() throws {
        var log = Changelog()
        try log.state("ann", 1, input: 0, partition: 0)
        log.position("2026-03-10T05:00:00Z", input: 0, partition: 0)
        try log.state("ann", 2, input: 4, partition: 0)
        log.position("2026-03-10T07:00:00Z", input: 4, partition: 0)
        try log.state("ann", 3, input: 5, partition: 0)  // an attempt that never committed
        log.position("2026-03-10T09:00:00Z", input: 5, partition: 0)
        try log.state("bob", 7, input: 2, partition: 1)
        log.position("2026-03-10T08:00:00Z", input: 2, partition: 1)
        log.cut(generation: 2, at: 5, partition: 0)
        log.cut(generation: 2, at: 3, partition: 1)
        let cuts = StateRekeying.cuts(in: log.messages, generation: 2)
        let (states, logTime) = try StateRekeying.committedStates(in: log.messages, cuts: cuts, as: Counter.self)
        #expect(states == ["ann": Counter(n: 2), "bob": Counter(n: 7)])
        // The latest committed time of any old partition: partition 1's 08:00, not 0's uncommitted 09:00.
        #expect(logTime == Timestamp(rfc3339: "2026-03-10T08:00:00Z"))
    }

    @Test("a partition without a cut is refused: its fold may still be running")
    func missingCut() throws {
        var log = Changelog()
        try log.state("ann", 1, input: 0, partition: 0)
        #expect(throws: StateRekeying.RekeyError.self) {
            _ = try StateRekeying.committedStates(in: log.messages, cuts: [:], as: Counter.self)
        }
    }

    /// A state with a binary image, as every shipped worker's: what restore holds undecoded.
    struct Tally: Codable, Hashable, Sendable, BinaryStateImage {
        var n: UInt8
        static let stateImageFormat: UInt32 = 1

        init(n: UInt8) { self.n = n }

        func binaryImage() -> [UInt8] { [0x08, 0x01, 0x10, n] }

        init(binaryImage bytes: [UInt8]) throws(StateImageError) {
            guard bytes.count == 4, bytes[0] == 0x08, bytes[2] == 0x10 else { throw StateImageError("not a tally image") }
            try StateImageFormat.check(UInt32(bytes[1]), reads: Self.stateImageFormat, of: "tally")
            n = bytes[3]
        }
    }

    @Test("an image recorded with its wake-up moves as it is, wake-up included (the new generation restores it lazily); one without is decoded and written again")
    func heldImagesMoveAsBytes() throws {
        var log = Changelog()
        let topic = Self.stateTopic
        let wake = Timestamp(rfc3339: "2026-03-10T09:30:00Z")
        log.append(ChangelogRecords.state(
            userId: "ann", image: Tally(n: 1).binaryImage(), inputOffset: 0, wakeUp: .recorded(wake), topic: topic, partition: 0), partition: 0)
        log.append(ChangelogRecords.state(
            userId: "ann", image: Tally(n: 2).binaryImage(), inputOffset: 1, wakeUp: .recorded(nil), topic: topic, partition: 0), partition: 0)
        log.append(ChangelogRecords.state(
            userId: "ann", image: Tally(n: 3).binaryImage(), inputOffset: 2, wakeUp: .recorded(nil), topic: topic, partition: 0), partition: 0)
        log.append(ChangelogRecords.state(userId: "bob", image: Tally(n: 7).binaryImage(), inputOffset: 0, topic: topic, partition: 1), partition: 1)
        log.append(ChangelogRecords.state(
            userId: "cy", image: Tally(n: 9).binaryImage(), inputOffset: 1, wakeUp: .recorded(wake), topic: topic, partition: 1), partition: 1)
        log.cut(generation: 2, at: 2, partition: 0)  // ann's third image is past the cut
        log.cut(generation: 2, at: 2, partition: 1)
        var committed = StateRekeying.CommittedImages<Tally>(cuts: StateRekeying.cuts(in: log.messages, generation: 2))
        for message in log.messages { try committed.add(message) }
        #expect(committed.users == ["ann", "bob", "cy"])

        func moved(_ user: String) throws -> (record: ProducerRecord, peek: ChangelogRecords.StatePeek) {
            let record = try #require(try committed.changelogRecord(of: user, partitions: 8, topic: "x.delivery-worker.state.g2"))
            #expect(record.partition == KeyPartitioner.partition(forKey: user, partitions: 8))
            let peek = try #require(ChangelogRecords.peekState(record.value ?? []))
            #expect(peek.inputOffset == ChangelogRecords.migratedInputOffset)
            return (record, peek)
        }
        let ann = try moved("ann")
        #expect(ann.peek.wakeUp == .recorded(nil) && Array((ann.record.value ?? [])[ann.peek.image]) == Tally(n: 2).binaryImage())
        let cy = try moved("cy")
        #expect(cy.peek.wakeUp == .recorded(wake) && Array((cy.record.value ?? [])[cy.peek.image]) == Tally(n: 9).binaryImage())
        let bob = try moved("bob")
        #expect(bob.peek.wakeUp == .unrecorded && Array((bob.record.value ?? [])[bob.peek.image]) == Tally(n: 7).binaryImage())
        #expect(try committed.state(of: "ann") == Tally(n: 2) && committed.state(of: "bob") == Tally(n: 7))
        #expect(try committed.state(of: "dan") == nil && committed.changelogRecord(of: "dan", partitions: 8, topic: "x") == nil)
    }

    @Test("re-keyed states land on murmur2's partition under the new count at input offset -1, and restore as committed")
    func rekeyedRecords() throws {
        let users = (0..<40).map { "user-\($0)" }
        var states: [String: Counter] = [:]
        for (n, user) in users.enumerated() { states[user] = Counter(n: n) }
        let time = Timestamp(rfc3339: "2026-03-10T08:00:00Z")
        let records = try StateRekeying.changelogRecords(states: states, logTime: time, partitions: 8, topic: "x.delivery-worker.state.g2")
        let stateRecords = records.filter { $0.key.map { String(decoding: $0, as: UTF8.self) } != ChangelogRecords.positionKey }
        #expect(stateRecords.count == users.count)
        for record in stateRecords {
            let user = String(decoding: record.key ?? [], as: UTF8.self)
            #expect(record.partition == KeyPartitioner.partition(forKey: user, partitions: 8))
        }
        #expect(Set(records.filter { $0.key.map { String(decoding: $0, as: UTF8.self) } == ChangelogRecords.positionKey }
            .compactMap(\.partition)) == Set(0..<8))
        // Read back as the new generation's changelog: nothing committed yet, and every state is valid.
        var restored: [String: Counter] = [:]
        var restoredTime: Timestamp?
        for (offset, record) in records.enumerated() {
            let message = KafkaMessage(
                topic: record.topic, partition: record.partition ?? 0, offset: Int64(offset), key: record.key, value: record.value,
                headers: record.headers, timestamp: nil, timestampType: nil)
            switch try ChangelogRecords.entry(of: message, as: Counter.self) {
            case .state(let user, let input, let state):
                #expect(input == ChangelogRecords.migratedInputOffset)
                restored[user] = state
            case .position(let input, let time):
                #expect(input == ChangelogRecords.migratedInputOffset)
                restoredTime = time
            default:
                Issue.record("unexpected changelog record")
            }
        }
        #expect(restored == states)
        #expect(restoredTime == time)
    }

    @Test("history copies skip attempts past the cut and what an interrupted copy already wrote")
    func historyCopies() {
        func change(_ user: String, input: Int64, partition: Int32, offset: Int64) -> KafkaMessage {
            let record = ChangelogRecords.change(
                userId: user, before: nil, after: Array(#"{"n":1}"#.utf8),
                input: SourceCoordinates(topic: Topics.deliveryInbox, partition: partition, offset: input),
                logTime: Timestamp(millisecondsSinceEpoch: 0), topic: Worker.delivery.historyTopic, partition: partition)
            return KafkaMessage(
                topic: Worker.delivery.historyTopic, partition: partition, offset: offset, key: record.key, value: record.value,
                headers: record.headers, timestamp: 1, timestampType: nil)
        }
        let history = [
            change("ann", input: 0, partition: 0, offset: 0),
            change("ann", input: 4, partition: 0, offset: 1),
            change("ann", input: 5, partition: 0, offset: 2),  // past the cut at 5
            change("bob", input: 1, partition: 1, offset: 0),
        ]
        let already: Set<String> = ["\(Worker.delivery.historyTopic):0:0"]
        let copies = StateRekeying.historyCopies(of: history, cuts: [0: 5, 1: 9], alreadyCopied: already, partitions: 8, topic: "h.g2")
        let origins = copies.compactMap { $0.headers.first { $0.name == StateRekeying.copiedFromHeader }?.value }
            .map { String(decoding: $0, as: UTF8.self) }
        #expect(origins == ["\(Worker.delivery.historyTopic):0:1", "\(Worker.delivery.historyTopic):1:0"])
        #expect(copies.allSatisfy { $0.partition == KeyPartitioner.partition(forKey: $0.key ?? [], partitions: 8) })
        #expect(copies.first?.value == history[1].value)
    }
}
