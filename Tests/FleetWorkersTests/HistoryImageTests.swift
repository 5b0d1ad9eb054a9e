import FleetModel
import FleetWorkers
import Foundation
import Kafka
import PropertyBased
import Testing
import UpstreamProcessors

/// The per-unit history image (`ChangelogRecords.historyImage`, kind `image`): what replay and
/// explain re-fold from (DESIGN.md principle 6), read back with the change records of the
/// builds before through one reader.
@Suite("History images")
struct HistoryImageTests {
    func message(_ record: ProducerRecord, offset: Int64) -> KafkaMessage {
        KafkaMessage(topic: record.topic, partition: record.partition ?? 0, offset: offset, key: record.key, value: record.value,
                     headers: record.headers, timestamp: nil, timestampType: nil)
    }

    @Test("an image reads back with its unit start, changed inputs, log time and state; a change record reads as a unit of one input")
    func roundTrip() throws {
        var state = ScoreState()
        state.lastScore = 71
        let image = ChangelogRecords.historyImage(
            userId: "u1", after: try StateCoding.encode(state), unitStart: 1_000, changed: [1_003, 1_010, 1_200],
            logTime: .at("2026-11-21T09:00:00Z"), inputTopic: "rin.score.batches", topic: "h", partition: 2)
        #expect(image.headers == [KafkaHeader(ChangelogRecords.kindHeader, "image")])
        let entry = try ChangelogRecords.historyEntry(of: message(image, offset: 7), as: ScoreState.self)
        #expect(entry.userId == "u1" && entry.after == state && entry.logTime == .at("2026-11-21T09:00:00Z"))
        #expect(entry.place == ChangelogRecords.HistoryPlace(
            userId: "u1", form: .unitImage, inputTopic: "rin.score.batches", inputPartition: 2, unitStart: 1_000,
            changed: [1_003, 1_010, 1_200]))
        #expect(entry.place.input == SourceCoordinates(topic: "rin.score.batches", partition: 2, offset: 1_200))
        if case .some = entry.before { Issue.record("an image has no before-image") }
        // The reader of the builds before refuses it by its kind instead of misreading it.
        #expect(throws: ChangelogRecords.ReadError.self) { try ChangelogRecords.change(of: message(image, offset: 7), as: ScoreState.self) }

        let input = SourceCoordinates(topic: "rin.score.batches", partition: 2, offset: 40)
        let change = ChangelogRecords.change(
            userId: "u1", before: nil, after: try StateCoding.encode(state), input: input, logTime: .at("2026-11-21T09:00:00Z"),
            topic: "h", partition: 2)
        let old = try ChangelogRecords.historyEntry(of: message(change, offset: 8), as: ScoreState.self)
        #expect(old.place.form == .binaryChange && old.place.unitStart == 40 && old.place.changed == [40] && old.after == state)
        if case .some(let before) = old.before { #expect(before == nil) } else { Issue.record("a change record has its before-image") }
    }

    @Test("any bytes as an image: an error naming the record, never a trap; truncations of a valid image never read as one with other offsets")
    func hostileBytes() async throws {
        let valid = ChangelogRecords.historyImage(
            userId: "u1", after: try StateCoding.encode(ScoreState()), unitStart: 5, changed: [5, 9],
            logTime: .at("2026-11-21T09:00:00Z"), inputTopic: "t", topic: "h", partition: 0)
        let bytes = try #require(valid.value)
        for cut in 0..<bytes.count {
            var truncated = valid
            truncated.value = Array(bytes.prefix(cut))
            if let place = try? ChangelogRecords.historyPlace(of: message(truncated, offset: 0)) {
                // A protobuf cut at a field boundary is a shorter valid message: never a wrong list.
                #expect(place.changed.isEmpty == false && Set(place.changed).isSubset(of: [5, 9]))
            }
        }
        await propertyCheck(count: 500, input: Gen.uint8(in: 0...255).array(of: 0...64)) { noise in
            var hostile = valid
            hostile.value = noise
            _ = try? ChangelogRecords.historyEntry(of: message(hostile, offset: 0), as: ScoreState.self)
        }
    }
}
