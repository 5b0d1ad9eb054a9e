import FleetModel
import PropertyBased
import Testing

/// One step of a random partition log for the alarm processor.
struct FoldOp: Sendable, CustomStringConvertible {
    enum Kind: Sendable { case record(user: String, command: String), tick, advance }
    var kind: Kind
    /// Seconds after the previous op's producer time; negative values model records stamped
    /// earlier than ones already in the log.
    var dt: Int64

    var description: String {
        switch kind {
        case .record(let user, let command): "\(user) \(command) +\(dt)s"
        case .tick: "tick +\(dt)s"
        case .advance: "advance +\(dt)s"
        }
    }

    static let generator = zip(
        Gen.int(in: 0...3), Gen.int(in: 0...9), Gen.int(in: 0...300), Gen.int(in: -20...200)
    ).map { user, kind, delay, dt -> FoldOp in
        let name = "u\(user)"
        let opKind: Kind = switch kind {
        case 0...4: .record(user: name, command: "in:\(delay)")
        case 5: .record(user: name, command: "repeat:\(max(delay, 60))")
        case 6: .record(user: name, command: delay % 3 == 0 ? "clear" : "reject")
        case 7: .tick
        default: .advance
        }
        return FoldOp(kind: opKind, dt: Int64(dt))
    }

    static let scripts = generator.array(of: 0...30)
}

/// Drives a fold over `FoldOp`s the way the simulator does: records and ticks take the next
/// offset, advances fire at the next offset and hand their last index on.
struct FoldScript {
    var fold = PartitionFold(processor: AlarmProcessor())
    var producerTime = epoch
    var nextOffset: Int64 = 0
    var pendingIndex = 0
    var lines: [String] = []
    var steps: [(offset: Int64, step: FoldStep<AlarmProcessor.State>)] = []
    /// `logTime` after every op and the largest time any op asked for so far.
    var timeline: [(logTime: Timestamp?, requested: Timestamp)] = []
    var largestRequested: Timestamp?

    mutating func run(_ op: FoldOp) {
        producerTime = producerTime + .seconds(op.dt)
        largestRequested = max(largestRequested ?? producerTime, producerTime)
        let step: FoldStep<AlarmProcessor.State>
        switch op.kind {
        case .record(let user, let command):
            step = fold.apply(
                action(user, command, id: "r\(nextOffset)"), timestamp: producerTime, coordinates: coordinates(nextOffset),
                firstIndex: pendingIndex)
            steps.append((nextOffset, step))
            nextOffset += 1; pendingIndex = 0
        case .tick:
            step = fold.apply(tick("t\(nextOffset)"), timestamp: producerTime, coordinates: coordinates(nextOffset), firstIndex: pendingIndex)
            steps.append((nextOffset, step))
            nextOffset += 1; pendingIndex = 0
        case .advance:
            step = fold.advance(to: producerTime, origin: coordinates(nextOffset), firstIndex: pendingIndex)
            steps.append((nextOffset, step))
            pendingIndex = step.nextIndex
        }
        lines += step.outputs.map(line)
        timeline.append((fold.logTime, largestRequested ?? producerTime))
    }

    mutating func run(_ ops: some Sequence<FoldOp>) { for op in ops { run(op) } }

    /// A new script resumed from this one's fold state, as the runtime restores a partition.
    func restored() -> FoldScript {
        var copy = FoldScript()
        copy.fold = PartitionFold(processor: AlarmProcessor(), restoring: fold.states, logTime: fold.logTime)
        copy.producerTime = producerTime
        copy.nextOffset = nextOffset
        copy.pendingIndex = pendingIndex
        copy.largestRequested = largestRequested
        return copy
    }
}

@Suite struct PartitionFoldPropertyTests {
    @Test func logTimeIsTheLargestTimeSeenAndNeverGoesBackwards() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts) { ops in
            var script = FoldScript()
            script.run(ops)
            for (logTime, requested) in script.timeline { #expect(logTime == requested) }
            let times = script.steps.flatMap { $0.step.outputs.map(\.timestamp) }
            #expect(times == times.sorted())
        }
    }

    @Test func everyAlarmRingsAtItsDueTimeInTimeOrder() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts) { ops in
            var script = FoldScript()
            script.run(ops)
            for output in script.steps.flatMap({ $0.step.outputs }) {
                guard let event = output.record.toyEvent, event.name == "rang" else { continue }
                #expect(event.properties["due"] == .string(output.timestamp.rfc3339))
            }
            // Nothing due is left behind: the next wake-up is after the log time.
            if let next = script.fold.nextWakeUp, let now = script.fold.logTime { #expect(next > now) }
        }
    }

    /// The schedule skips a lookup when a step changed another user than the one on top of its
    /// heap (`TimerSchedule.dropStaleTop(changed:)`); a stale top left behind would show here.
    @Test func theNextWakeUpIsAlwaysTheEarliestOfTheStoredStates() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts) { ops in
            var script = FoldScript()
            for op in ops {
                script.run(op)
                let live = script.fold.states.values.compactMap { script.fold.processor.nextWakeUp($0) }.min()
                #expect(script.fold.nextWakeUp == live, "after \(op)")
            }
        }
    }

    @Test func idsComeFromTheStepsCoordinatesAndAreUnique() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts) { ops in
            var script = FoldScript()
            script.run(ops)
            var seen = Set<String>()
            for (offset, step) in script.steps {
                for output in step.outputs {
                    #expect(output.record.id.hasPrefix("toy.in:0:\(offset):"))
                    #expect(seen.insert(output.record.id).inserted, "duplicate id \(output.record.id)")
                }
            }
        }
    }

    // DESIGN principle 7: a rejected record is as if only the time had passed.
    @Test func aRejectedRecordIsLikeTimePassing() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts, Gen.int(in: 0...3)) { ops, user in
            var script = FoldScript()
            script.run(ops)
            var timeOnly = script.fold
            let origin = coordinates(script.nextOffset)
            let when = script.producerTime + .seconds(30)
            let expected = timeOnly.advance(to: when, origin: origin, firstIndex: script.pendingIndex)
            let rejected = script.fold.apply(action("u\(user)", "reject"), timestamp: when, coordinates: origin, firstIndex: script.pendingIndex)
            #expect(rejected.deadLetter != nil)
            #expect(rejected.outputs == expected.outputs)
            #expect(script.fold.states == timeOnly.states)
        }
    }

    // DESIGN principle 7: taking back a step (`reject`, for a record whose outputs or state
    // would exceed their bound) leaves exactly what a processor refusal leaves, and the log
    // folds on identically from there.
    @Test func takingBackAStepEqualsARefusal() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts, Gen.int(in: 0...3), Gen.int(in: 0...300), FoldOp.scripts) { ops, user, delay, rest in
            var script = FoldScript()
            script.run(ops)
            var refused = script
            let origin = coordinates(script.nextOffset)
            let when = script.producerTime + .seconds(30)
            let logTimeBefore = script.fold.logTime
            let applied = script.fold.apply(action("u\(user)", "in:\(delay)"), timestamp: when, coordinates: origin, firstIndex: script.pendingIndex)
            let error = RecordError("too large")
            let takenBack = script.fold.reject(
                applied, logTimeBefore: logTimeBefore, timestamp: when, coordinates: origin, firstIndex: script.pendingIndex, error: error)
            let refusal = refused.fold.apply(action("u\(user)", "reject"), timestamp: when, coordinates: origin, firstIndex: script.pendingIndex)
            #expect(takenBack.outputs == refusal.outputs)
            #expect(takenBack.deadLetter == error && refusal.deadLetter != nil)
            #expect(script.fold.states == refused.fold.states)
            #expect(script.fold.logTime == refused.fold.logTime)
            #expect(script.fold.nextWakeUp == refused.fold.nextWakeUp)
            script.nextOffset += 1; script.pendingIndex = 0
            refused.nextOffset += 1; refused.pendingIndex = 0
            script.lines = []; refused.lines = []
            script.run(rest)
            refused.run(rest)
            #expect(script.lines == refused.lines)
        }
    }

    // DESIGN principle 5: restoring the state at any offset and folding the rest equals one run.
    @Test func restoringMidRunEqualsOneRun() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts, Gen.int(in: 0...30)) { ops, cut in
            let split = min(cut, ops.count)
            var whole = FoldScript()
            whole.run(ops)

            var first = FoldScript()
            first.run(ops[..<split])
            var second = first.restored()
            second.run(ops[split...])
            #expect(first.lines + second.lines == whole.lines)
            #expect(second.fold.states == whole.fold.states)
            #expect(second.fold.logTime == whole.fold.logTime)
        }
    }

    // DESIGN principle 3 (crash equivalence): folding a tail twice from the same restored state,
    // as after a crash before the commit, yields the same records with the same ids.
    @Test func reprocessingATailFromASnapshotRepeatsItExactly() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts, Gen.int(in: 0...30), Gen.int(in: 0...30)) { ops, a, b in
            let committed = min(a, b, ops.count), crashed = min(max(a, b), ops.count)
            var run = FoldScript()
            run.run(ops[..<committed])
            let snapshot = run.restored()

            var beforeCrash = snapshot
            beforeCrash.run(ops[committed..<crashed])
            var afterRestart = snapshot
            afterRestart.run(ops[committed...])
            #expect(Array(afterRestart.lines.prefix(beforeCrash.lines.count)) == beforeCrash.lines)

            run.run(ops[committed...])
            #expect(afterRestart.lines == run.lines.suffix(afterRestart.lines.count))
        }
    }

    /// The simulator lets time pass in slices before each record; the fold must give the same
    /// records, ids included, as a runtime that fires everything when the record arrives.
    @Test func advancingInSlicesThenApplyingEqualsApplyingAlone() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts, Gen.int(in: 0...400).array(of: 0...4)) { ops, slices in
            let records = ops.filter { if case .advance = $0.kind { false } else { true } }
            var direct = FoldScript()
            direct.run(records)

            var sliced = FoldScript()
            for op in records {
                // Advance to a few times up to (never past) the record's own time.
                let target = sliced.producerTime + .seconds(op.dt)
                var time = sliced.producerTime
                for slice in slices.sorted() {
                    let next = min(time + .seconds(Int64(slice)), target)
                    let step = sliced.fold.advance(to: next, origin: coordinates(sliced.nextOffset), firstIndex: sliced.pendingIndex)
                    sliced.pendingIndex = step.nextIndex
                    sliced.lines += step.outputs.map(line)
                    time = next
                }
                sliced.run(op)
            }
            #expect(sliced.lines == direct.lines)
        }
    }

    @Test func sameInputGivesByteIdenticalOutput() async {
        await propertyCheck(count: 1000, input: FoldOp.scripts) { ops in
            var one = FoldScript(), two = FoldScript()
            one.run(ops)
            two.run(ops)
            #expect(one.lines == two.lines)
            #expect(one.fold.states == two.fold.states)
        }
    }
}
