import FleetModel
import Foundation
import PropertyBased
import Testing

/// Lazy restore (DESIGN.md principle 5): a partition restored with users held as images and
/// their recorded wake-ups folds exactly as one restored with every state decoded, and a held
/// image that does not decode stops only its user.
@Suite struct LazyRestoreTests {
    static let decode: StateImageDecoder<AlarmProcessor.State> = { image throws(StateImageError) in
        do {
            return try JSONDecoder().decode(AlarmProcessor.State.self, from: Data(image))
        } catch {
            throw StateImageError("alarm state does not decode: \(error)")
        }
    }

    /// `script` resumed from its fold's state, users whose bit is set in `heldMask` held as
    /// images with their wake-ups, the others decoded: a changelog mixing records with recorded
    /// wake-ups (this build) and without (the build before), as in a rolling upgrade.
    static func restoredLazily(_ script: FoldScript, heldMask: Int) throws -> FoldScript {
        var copy = script.restored()
        var decoded: [String: AlarmProcessor.State] = [:]
        var held: [String: HeldStateImage] = [:]
        for (user, state) in script.fold.states {
            let index = Int(user.dropFirst()) ?? 0
            if heldMask & (1 << index) != 0 {
                held[user] = HeldStateImage(image: Array(try JSONEncoder().encode(state)), wakeUp: AlarmProcessor().nextWakeUp(state))
            } else {
                decoded[user] = state
            }
        }
        copy.fold = PartitionFold(
            processor: AlarmProcessor(), restoring: decoded, holding: held, decode: decode, logTime: script.fold.logTime)
        #expect(copy.fold.userCount == script.fold.states.count)
        #expect(copy.fold.nextWakeUp == script.fold.nextWakeUp)
        return copy
    }

    /// Every user's state, held images decoded.
    static func allStates(_ fold: PartitionFold<AlarmProcessor>) throws -> [String: AlarmProcessor.State] {
        var states = fold.states
        for (user, held) in fold.held { states[user] = try decode(held.image) }
        return states
    }

    // DESIGN principle 5 (and crash equivalence): a lazily restored partition yields the same
    // records, ids and states as an eagerly restored one and as one uninterrupted run.
    @Test func restoringLazilyMidRunEqualsOneRun() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts, Gen.int(in: 0...30), Gen.int(in: 0...15)) { ops, cut, mask in
            let split = min(cut, ops.count)
            var whole = FoldScript()
            whole.run(ops)

            var first = FoldScript()
            first.run(ops[..<split])
            var eager = first.restored()
            eager.run(ops[split...])
            guard var lazy = try? Self.restoredLazily(first, heldMask: mask) else {
                Issue.record("an alarm state did not encode")
                return
            }
            lazy.run(ops[split...])
            #expect(first.lines + lazy.lines == whole.lines)
            #expect(lazy.lines == eager.lines)
            #expect((try? Self.allStates(lazy.fold)) == whole.fold.states)
            #expect(lazy.fold.logTime == whole.fold.logTime)
            #expect(lazy.fold.nextWakeUp == whole.fold.nextWakeUp)
            // A user is held only while nothing touched it.
            for user in lazy.fold.held.keys { #expect(lazy.fold.states[user] == nil) }
        }
    }

    // DESIGN principle 7: an image that does not decode stops its user, not the partition. A
    // record for the user is dead-lettered naming the decode error (re-drivable once a build
    // reads the image), its timer is dropped and reported, and the image stays held as the
    // changelog has it; every other user folds as if the broken one were absent.
    @Test func aHeldImageThatDoesNotDecodeStopsOnlyItsUser() throws {
        var script = FoldScript()
        script.run([
            FoldOp(kind: .record(user: "u0", command: "in:60"), dt: 0),
            FoldOp(kind: .record(user: "u1", command: "in:60"), dt: 1),
        ])
        let broken: [UInt8] = Array("not an alarm state".utf8)
        let u0 = try #require(script.fold.states["u0"]), u1 = try #require(script.fold.states["u1"])
        var fold = PartitionFold(
            processor: AlarmProcessor(), restoring: [:],
            holding: [
                "u0": HeldStateImage(image: broken, wakeUp: AlarmProcessor().nextWakeUp(u0)),
                "u1": HeldStateImage(image: Array(try JSONEncoder().encode(u1)), wakeUp: AlarmProcessor().nextWakeUp(u1)),
            ],
            decode: Self.decode, logTime: script.fold.logTime)
        // Without u0: what the partition must still do for u1.
        var without = PartitionFold(processor: AlarmProcessor(), restoring: ["u1": u1], logTime: script.fold.logTime)

        let when = at(300)
        let ticked = fold.apply(tick("t"), timestamp: when, coordinates: coordinates(2))
        let reference = without.apply(tick("t"), timestamp: when, coordinates: coordinates(2))
        #expect(ticked.outputs == reference.outputs && ticked.outputs.count == 1)
        #expect(ticked.undecodable.map(\.userId) == ["u0"])
        #expect(ticked.undecodable.first?.error.description.contains("does not decode") == true)
        #expect(fold.held["u0"]?.image == broken)
        #expect(fold.nextWakeUp == nil)

        let record = fold.apply(action("u0", "in:30"), timestamp: at(400), coordinates: coordinates(3))
        #expect(record.outputs.isEmpty && record.changes.isEmpty)
        let error = try #require(record.deadLetter)
        #expect(error.message.contains("u0") && error.message.contains("does not decode"))
        #expect(fold.held["u0"]?.image == broken && fold.states["u0"] == nil)

        // The partition goes on for everyone else.
        let other = fold.apply(action("u1", "in:30"), timestamp: at(400), coordinates: coordinates(3))
        let otherReference = without.apply(action("u1", "in:30"), timestamp: at(400), coordinates: coordinates(3))
        #expect(other.deadLetter == nil && other.outputs == otherReference.outputs)
        #expect(fold.states == without.states)
    }
}
