import DeliveryPolicy
import FleetModel
import FleetTestSupport
import FleetWorkers
import Foundation
import Synchronization
import Kafka
import PropertyBased
import Testing
import UpstreamProcessors

/// The fold's size bounds (DESIGN.md principle 7, `RecordLimits`): whatever a log holds, no
/// output record and no state image the fold hands to the runtime exceeds its bound, and a
/// record that would make one do so is refused deterministically, as a processor refusal is.
@Suite struct OutputBoundTests {
    /// Small bounds, so that random traffic reaches them often.
    static let limits = RecordLimits(maxRecordBytes: 40_000, maxOutputBytes: 16_384, maxStateBytes: 16_384)

    /// A random delivery-inbox log: intents of several types with data of random sizes (names
    /// lists, long details), activity and ticks, for three users, over a few days.
    static func inboxLog(seed: UInt64, count: Int) -> [KafkaMessage] {
        var rng = SplitMix64(seed: seed)
        var messages: [KafkaMessage] = []
        var time: Int64 = 1_795_240_800_000  // 2026-11-21T06:00:00Z
        for offset in 0..<count {
            time += Int64(rng.int(0...5_400)) * 1_000
            let user = "u\(rng.int(3))"
            let id = "i-\(offset)"
            let source = #""source":{"offset":\#(offset),"partition":0,"topic":"t"}"#
            func text(_ length: Int) -> String { String(repeating: "x", count: length) }
            let json: String
            switch rng.int(10) {
            case 0...2:
                let names = (0..<rng.int(0...400)).map { _ in "\"\(text(rng.int(1...200)))\"" }.joined(separator: ",")
                json = #"{"v":1,"type":"intent","id":"\#(id)","user_id":"\#(user)","notification":"contacts.enrichment","category":"CONTACTS","data":{"names":[\#(names)],"contact_ids":["c"]},\#(source)}"#
            case 3...4:
                json = #"{"v":1,"type":"intent","id":"\#(id)","user_id":"\#(user)","notification":"security.new_signin","category":"SECURITY","data":{"detail":"\#(text(rng.int(1...1_024)))"},\#(source)}"#
            case 5:
                json = #"{"v":1,"type":"intent","id":"\#(id)","user_id":"\#(user)","notification":"contacts.dedup_ready","category":"CONTACTS","data":{"count":\#(rng.int(1...9))},\#(source)}"#
            case 6:
                json = #"{"v":1,"type":"intent","id":"\#(id)","user_id":"\#(user)","notification":"score.updated","category":"SCORE","data":{"new":\#(rng.int(0...100)),"label":"\#(text(rng.int(1...1_000)))"},\#(source)}"#
            case 7:
                json = #"{"v":1,"type":"app.opened","id":"\#(id)","user_id":"\#(user)","entry_source":"organic"}"#
            case 8:
                json = #"{"v":1,"type":"section.item","id":"\#(id)","user_id":"\#(user)","section":"enrichment_updates","item_id":"\#(text(rng.int(1...128)))","item":{"note":"\#(text(rng.int(1...1_024)))"}}"#
            default:
                json = #"{"v":1,"type":"tick","id":"\#(id)"}"#
            }
            let key: [UInt8]? = json.contains(#""type":"tick""#) ? nil : Array(user.utf8)
            messages.append(KafkaMessage(
                topic: Topics.deliveryInbox, partition: 0, offset: Int64(offset), key: key, value: Array(json.utf8),
                timestamp: time, timestampType: .createTime))
        }
        return messages
    }

    static let seeds = Gen.int(in: 0...Int(Int32.max)).map { UInt64($0) }
    /// How many cases reached a bound: the property must be exercised, not vacuous.
    static let casesWithRefusals = Atomic<Int>(0)

    // DESIGN.md principle 7: no input can make any output or state exceed its bound.
    @Test func noOutputOrStateExceedsItsBound() async throws {
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        await propertyCheck(count: 40, input: Self.seeds) { seed in
            var fold = PartitionFold(processor: engine)
            var refused = 0
            for message in Self.inboxLog(seed: seed, count: 250) {
                let folded = LogFolding.fold(message, into: &fold, limits: Self.limits)
                if let error = folded.deadLetter, error.message.contains("RecordLimits") { refused += 1 }
                for value in folded.outputValues { #expect(value.count <= Self.limits.maxOutputBytes) }
                for (change, image) in zip(folded.step?.changes ?? [], folded.stateImages) {
                    // Not encoded while folding when the bound check did not need it; written
                    // when the unit is sealed.
                    let written = try image ?? StateCoding.encode(change.after)
                    #expect(written.count <= Self.limits.maxStateBytes)
                }
                #expect(folded.outputValues.count == folded.step?.outputs.count ?? 0)
                #expect(folded.stateImages.count == folded.step?.changes.count ?? 0)
            }
            for (_, state) in fold.states {
                let size = (try? StateCoding.encode(state).count) ?? Int.max
                #expect(size <= Self.limits.maxStateBytes)
            }
            if refused > 0 { Self.casesWithRefusals.add(1, ordering: .relaxed) }
        }
        #expect(Self.casesWithRefusals.load(ordering: .relaxed) >= 10, "the bounds were reached in too few cases to mean anything")
    }

    // DESIGN.md principles 3 and 7: a record refused for a bound is refused in every re-run,
    // and folding on from a restored state agrees with one run (what a replay relies on).
    @Test func refusalsAreDeterministicAcrossRestores() async throws {
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        await propertyCheck(count: 20, input: Self.seeds, Gen.int(in: 0...200)) { seed, cut in
            let log = Self.inboxLog(seed: seed, count: 200)
            var whole = PartitionFold(processor: engine)
            var wholeOut: [[UInt8]] = [], wholeErrors: [String?] = []
            for message in log {
                let folded = LogFolding.fold(message, into: &whole, limits: Self.limits)
                wholeOut += folded.outputValues
                wholeErrors.append(folded.deadLetter?.message)
            }
            var first = PartitionFold(processor: engine)
            var out: [[UInt8]] = [], errors: [String?] = []
            for message in log[..<cut] {
                let folded = LogFolding.fold(message, into: &first, limits: Self.limits)
                out += folded.outputValues
                errors.append(folded.deadLetter?.message)
            }
            var second = PartitionFold(processor: engine, restoring: first.states, logTime: first.logTime)
            for message in log[cut...] {
                let folded = LogFolding.fold(message, into: &second, limits: Self.limits)
                out += folded.outputValues
                errors.append(folded.deadLetter?.message)
            }
            #expect(out == wholeOut)
            #expect(errors == wholeErrors)
        }
    }

    // DESIGN.md principles 3 and 7: a fold recording only which users changed (the runtime's,
    // with binary images) checks the same bounds, refuses the same records and hands out the
    // same bytes as one recording each change's states (replay's and explain's).
    @Test func recordingUsersFoldsByteForByteAsRecordingStates() async throws {
        let engine = try DeliveryEngine(profile: PolicyProfile.shipped("rin"))
        await propertyCheck(count: 20, input: Self.seeds) { seed in
            var states = PartitionFold(processor: engine)
            var users = PartitionFold(processor: engine)
            users.recording = .users
            var refused = 0
            for message in Self.inboxLog(seed: seed, count: 200) {
                let full = LogFolding.fold(message, into: &states, limits: Self.limits)
                let light = LogFolding.fold(message, into: &users, limits: Self.limits)
                #expect(light.deadLetter == full.deadLetter)
                #expect(light.outputValues == full.outputValues)
                #expect(light.stateImages == full.stateImages)
                #expect(light.stateEncodingError == nil && full.stateEncodingError == nil)
                let changed = light.step.map { step in (0..<step.changeCount).map { step.changedUser(at: $0) } }
                #expect(changed == full.step?.changes.map(\.userId))
                if full.deadLetter?.message.contains("RecordLimits") == true { refused += 1 }
            }
            #expect(users.states == states.states)
            if refused > 0 { Self.recordingCasesWithRefusals.add(1, ordering: .relaxed) }
        }
        #expect(Self.recordingCasesWithRefusals.load(ordering: .relaxed) >= 5, "too few cases refused a record to compare refusals")
    }

    static let recordingCasesWithRefusals = Atomic<Int>(0)

    @Test("a record whose state would pass the bound is refused with the size and the limit, and changes nothing")
    func stateBoundRefusal() throws {
        let limits = RecordLimits(maxRecordBytes: 262_144, maxOutputBytes: 262_144, maxStateBytes: 16_384)
        var fold = PartitionFold(processor: ReminderProcessor())
        var refusals: [String] = []
        for n in 0..<40 {
            let json = #"{"v":1,"type":"reminder.upserted","id":"r\#(n)","user_id":"u","reminder_id":"f\#(n)","kind":"followup","contact_id":"c","contact_name":"Tom","time_zone":"UTC","fire_at_local":"2027-01-05T10:00","note":"\#(String(repeating: "n", count: 1_000))"}"#
            let message = KafkaMessage(
                topic: Topics.reminderInbox, partition: 0, offset: Int64(n), key: Array("u".utf8), value: Array(json.utf8),
                timestamp: 1_700_000_000_000 + Int64(n), timestampType: .createTime)
            let before = fold.states
            let folded = LogFolding.fold(message, into: &fold, limits: limits)
            if let error = folded.deadLetter {
                refusals.append(error.message)
                #expect(fold.states == before)
                #expect(folded.outputValues.isEmpty && folded.stateImages.isEmpty)
            }
        }
        #expect(refusals.count > 20)
        #expect(refusals.allSatisfy { $0.contains("the state of user 'u' would be") && $0.contains("over the 15360 a record may leave (state limit 16384, FLEET_MAX_STATE_BYTES") })
    }
}

