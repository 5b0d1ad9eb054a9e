import FleetModel
import Foundation
import PropertyBased
import Testing
import UpstreamProcessors

/// One input of a random history: kind selector, day offset, and a value.
typealias RandomInput = (kind: Int, day: Int, value: Int)

private let inputGen = zip(Gen.int(in: 0...5), Gen.int(in: 0...120), Gen.int(in: 0...100)).map { RandomInput($0.0, $0.1, $0.2) }

/// Builds a mixed, time-ordered record history for one user from random numbers.
private func history(_ inputs: [RandomInput]) -> [(String, Timestamp, FleetRecord)] {
    let start = at("2026-01-01T00:00:00Z")
    var result: [(String, Timestamp, FleetRecord)] = []
    for (i, input) in inputs.enumerated() {
        let time = start + .days(Int64(input.day)) + .minutes(Int64(i))
        let zoneId = propertyZones[input.value % propertyZones.count]
        switch input.kind {
        case 0:
            result.append((Topics.scoreBatches, time, .scoreComputed(ScoreComputed(
                id: "s\(i)", userId: "u1", batchId: "b\(i)", computedAt: time, score: input.value,
                components: .init(quality: (input.value * 7) % 101, position: (input.value * 3) % 101, stability: input.value, trust: 100 - input.value)))))
        case 1:
            result.append((Topics.syncResults, time, .contactsSyncCompleted(ContactsSyncCompleted(
                id: "y\(i)", userId: "u1", syncId: "sync\(i % 7)", completedAt: time, added: input.value % 3,
                updated: input.value % 2, autoMerged: input.value % 4 == 0 ? 1 : 0, newDedupSuggestions: input.value % 5,
                unreviewedDedupSuggestions: input.value % 20, oldestUnreviewedDedupAt: time - .days(Int64(input.value % 30)),
                enrichment: input.value % 3 == 0 ? [.init(contactId: "c\(i)", name: "N\(i)")] : []))))
        case 2:
            result.append((Topics.accessRequests, time, .accessRequested(AccessRequested(
                id: "a\(i)", userId: "u1", requestId: "req\(input.value % 4)", requesterName: "R", field: "email"))))
        case 3:
            let local = Zone.utc.localDateTime(at: time + .hours(Int64(input.value)))
            result.append((Topics.reminderInbox, time, followup("f\(input.value % 5)", local.description, zone: zoneId,
                recurrence: [Recurrence.none, .weekly, .monthly][input.value % 3])))
        case 4:
            let md = MonthDay(month: input.value % 12 + 1, day: input.value % 28 + 1)?.description ?? "01-01"
            result.append((Topics.reminderInbox, time, birthday("b\(input.value % 5)", md, zone: zoneId)))
        default:
            result.append((Topics.reminderInbox, time, cancel(["f", "b"][input.value % 2] + "\(input.value % 5)")))
        }
    }
    return result.sorted { $0.1 < $1.1 }
}

/// Runs every upstream processor over `records`, optionally round-tripping every state through
/// JSON after each step (a restart restoring from the changelog), and returns the canonical
/// bytes of every output.
private func run(
    _ records: [(String, Timestamp, FleetRecord)], restartEveryStep: Bool,
    through roundTrip: (any Codable & BinaryStateImage) throws -> any Codable = { try roundTrip($0) }
) throws -> [[UInt8]] {
    var score = Harness(ScoreProcessor(), topic: Topics.scoreBatches)
    var sync = Harness(SyncProcessor(), topic: Topics.syncResults)
    var access = Harness(AccessProcessor(), topic: Topics.accessRequests)
    var reminder = Harness(ReminderProcessor(), topic: Topics.reminderInbox)
    for (topic, time, record) in records {
        switch topic {
        case Topics.scoreBatches: try score.process(record, at: time)
        case Topics.syncResults: try sync.process(record, at: time)
        case Topics.accessRequests: try access.process(record, at: time)
        default: try reminder.process(record, at: time)
        }
        if restartEveryStep {
            score.state = try restored(score.state, through: roundTrip)
            sync.state = try restored(sync.state, through: roundTrip)
            access.state = try restored(access.state, through: roundTrip)
            reminder.state = try restored(reminder.state, through: roundTrip)
        }
    }
    reminder.advance(to: at("2027-01-01T00:00:00Z"))
    return (score.outputs + sync.outputs + access.outputs + reminder.outputs).map { RecordCodec.encode($0.record) }
}

/// `state` after `roundTrip`, which must give back the same type.
private func restored<T: Codable & BinaryStateImage>(_ state: T, through roundTrip: (any Codable & BinaryStateImage) throws -> any Codable) throws -> T {
    guard let back = try roundTrip(state) as? T else { throw StateImageError("round trip changed the type of \(T.self)") }
    return back
}

/// Through the binary image, as the changelog now holds states.
private func binaryRoundTrip(_ state: any Codable & BinaryStateImage) throws -> any Codable {
    func open<T: Codable & BinaryStateImage>(_ state: T) throws -> any Codable {
        let image = try state.binaryImage()
        let back = try T(binaryImage: image)
        // Deterministic: the decoded state writes the same bytes.
        guard try back.binaryImage() == image else { throw StateImageError("\(T.self): image not stable") }
        return back
    }
    return try open(state)
}

/// Written as JSON by the build before binary images, read back, and written binary (a rolling
/// upgrade between two records).
private func upgradeRoundTrip(_ state: any Codable & BinaryStateImage) throws -> any Codable {
    func open<T: Codable & BinaryStateImage>(_ state: T) throws -> any Codable {
        let fromJSON: T = try roundTrip(state)
        return try T(binaryImage: try fromJSON.binaryImage())
    }
    return try open(state)
}

private func roundTrip<T: Codable>(_ value: T) throws -> T {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    return try JSONDecoder().decode(T.self, from: encoder.encode(value))
}

@Suite("Upstream properties")
struct DeterminismPropertyTests {
    @Test("P-TIME-2 property: the same input gives byte-identical output, also when every state is restored from JSON between records")
    func sameInputSameBytes() async {
        await propertyCheck(count: 40, input: inputGen.array(of: 1...60)) { inputs in
            let records = history(inputs)
            let first = try run(records, restartEveryStep: false)
            let second = try run(records, restartEveryStep: false)
            let restarted = try run(records, restartEveryStep: true)
            #expect(first == second)
            #expect(first == restarted)
        }
    }

    @Test("state image property: every upstream state round-trips through its binary image (and from JSON to binary) and restoring from it between records changes no output byte")
    func binaryImagesRoundTrip() async {
        await propertyCheck(count: 40, input: inputGen.array(of: 1...60)) { inputs in
            let records = history(inputs)
            let uninterrupted = try run(records, restartEveryStep: false)
            #expect(try run(records, restartEveryStep: true, through: binaryRoundTrip) == uninterrupted)
            #expect(try run(records, restartEveryStep: true, through: upgradeRoundTrip) == uninterrupted)
        }
    }

    @Test("P-SCO-3 property: score milestones never repeat, for any sequence of scores")
    func milestonesNeverRepeat() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...100).array(of: 1...80)) { scores in
            var h = Harness(ScoreProcessor(), topic: Topics.scoreBatches)
            for (day, value) in scores.enumerated() {
                let time = at("2026-01-01T02:00:00Z") + .days(Int64(day))
                try h.process(.scoreComputed(ScoreComputed(
                    id: "r\(day)", userId: "u1", batchId: "b\(day)", computedAt: time, score: value,
                    components: .init(quality: 50, position: 50, stability: 50, trust: 50))), at: time)
            }
            let thresholds = h.outputs.compactMap(\.intent).filter { $0.notification == "score.milestone" }
                .compactMap { $0.data["threshold"]?.intValue }
            // Strictly rising thresholds: no label twice, never a lower one.
            #expect(thresholds == thresholds.sorted() && Set(thresholds).count == thresholds.count, "\(scores)")
            // Exactly the labels that rise above every label reached before.
            let bounds: [Int64] = [0, 30, 60, 80]
            var highest = bounds.last { $0 <= Int64(scores[0]) } ?? 0
            var expected: [Int64] = []
            for value in scores.dropFirst() {
                let bound = bounds.last { $0 <= Int64(value) } ?? 0
                if bound > highest {
                    expected.append(bound)
                    highest = bound
                }
            }
            #expect(thresholds == expected, "\(scores)")
        }
    }
}
