import DeliveryPolicy
import FleetModel
import PropertyBased
import Testing

/// Properties of the engine over random traffic, random zones and random settings
/// (`RandomTraffic`), 1 000 cases each.
@Suite struct EnginePropertyTests {
    static let cases = 1000
    static let seeds = Gen.uint64(in: 0...UInt64.max)
    static let profile: PolicyProfile = {
        do { return try PolicyProfile.shipped("rin") } catch { fatalError("rin profile: \(error)") }
    }()

    static func run(_ traffic: RandomTraffic) throws -> EngineDriver {
        var driver = EngineDriver(profile: profile)
        for line in traffic.lines { driver.feed(line.record, at: line.at) }
        try driver.run(until: traffic.end.rfc3339)
        return driver
    }

    static func deliveries(_ d: EngineDriver) -> [(at: Timestamp, delivery: Delivery)] {
        d.outputs.compactMap { o in
            if case .delivery(let delivery) = o.record { return (o.timestamp, delivery) }
            return nil
        }
    }

    @Test("P-BUD-1 never more than the budget of non-security deliveries in any local day")
    func budgetPerLocalDay() async {
        await propertyCheck(count: Self.cases, input: Self.seeds) { seed in
            let traffic = RandomTraffic(seed: seed)
            guard let d = try? Self.run(traffic) else { Issue.record("run failed for seed \(seed)"); return }
            var perDay: [Int: Int] = [:]
            for (at, delivery) in Self.deliveries(d) where delivery.category != "SECURITY" {
                perDay[traffic.zone.localDate(at: at).daysSinceEpoch, default: 0] += 1
            }
            #expect(perDay.values.allSatisfy { $0 <= Self.profile.budget.dailyLimit }, "seed \(seed): \(perDay)")
        }
    }

    @Test("P-BUD-1 security is always delivered at the time it arrived")
    func securityImmediately() async {
        await propertyCheck(count: Self.cases, input: Self.seeds) { seed in
            let traffic = RandomTraffic(seed: seed)
            guard let d = try? Self.run(traffic) else { Issue.record("run failed for seed \(seed)"); return }
            let decided = Dictionary(grouping: d.outputs.compactMap { o -> (String, Timestamp, Decision)? in
                if case .decision(let x) = o.record { return (x.intentId, o.timestamp, x) }
                return nil
            }, by: \.0)
            for line in traffic.lines where line.notification?.hasPrefix("security.") == true {
                guard let id = line.intentId, let decisions = decided[id] else { continue }  // a copy of an id seen before
                #expect(decisions.count == 1 && decisions[0].2.outcome == .delivered && decisions[0].1 == line.at, "seed \(seed) \(id)")
                if !traffic.pushOff {
                    #expect(Self.deliveries(d).contains { $0.delivery.mergedIntents == [id] && $0.at == line.at }, "seed \(seed) \(id)")
                }
            }
        }
    }

    @Test("P-DND-1 nothing is pushed inside quiet hours but security and follow-ups the user scheduled there")
    func quietHoursRespected() async {
        await propertyCheck(count: Self.cases, input: Self.seeds) { seed in
            let traffic = RandomTraffic(seed: seed)
            guard let d = try? Self.run(traffic) else { Issue.record("run failed for seed \(seed)"); return }
            let quiet = traffic.quietHours
            func inQuiet(_ local: LocalTimeOfDay) -> Bool {
                let m = local.minuteOfDay, s = quiet.start.minuteOfDay, e = quiet.end.minuteOfDay
                return s == e ? false : s < e ? (m >= s && m < e) : (m >= s || m < e)
            }
            for (at, delivery) in Self.deliveries(d) where delivery.channel == .push && delivery.category != "SECURITY" {
                guard inQuiet(traffic.zone.localDateTime(at: at).time) else { continue }
                #expect(delivery.notification == "reminder.followup", "seed \(seed): \(delivery.notification) at \(at)")
            }
        }
    }

    @Test("P-LAP-3 at most one non-reminder delivery per 7 days in quiet mode")
    func quietModeWeekly() async {
        await propertyCheck(count: Self.cases, input: Self.seeds) { seed in
            let traffic = RandomTraffic(seed: seed)
            guard let d = try? Self.run(traffic) else { Issue.record("run failed for seed \(seed)"); return }
            var quietSince: Timestamp?
            var sentInQuiet: [Timestamp] = []
            for o in d.outputs {
                switch o.record {
                case .retentionEvent(let e) where e.event == "retention.quiet_mode_entered": quietSince = o.timestamp
                case .retentionEvent(let e) where e.event == "retention.app_opened": quietSince = nil
                case .delivery(let x) where quietSince != nil && x.category != "SECURITY" && x.category != "REMINDER":
                    if let last = sentInQuiet.last, o.timestamp - last < .days(7) {
                        Issue.record("seed \(seed): two quiet-mode notifications within 7 days at \(last) and \(o.timestamp)")
                    }
                    sentInQuiet.append(o.timestamp)
                default: break
                }
            }
        }
    }

    @Test("every accepted intent gets exactly one final decision, and nothing after it")
    func oneFinalDecision() async {
        await propertyCheck(count: Self.cases, input: Self.seeds) { seed in
            let traffic = RandomTraffic(seed: seed)
            guard let d = try? Self.run(traffic) else { Issue.record("run failed for seed \(seed)"); return }
            var finals: [String: Int] = [:]
            for o in d.outputs {
                guard case .decision(let x) = o.record else { continue }
                #expect(finals[x.intentId] == nil, "seed \(seed): decision after the final one for \(x.intentId)")
                if x.outcome.isFinal { finals[x.intentId, default: 0] += 1 }
            }
            let intents = Set(traffic.lines.compactMap(\.intentId))
            #expect(Set(finals.keys) == intents, "seed \(seed)")
            #expect(d.errors.isEmpty, "seed \(seed): \(d.errors)")
        }
    }

    @Test("P-TIME-2 the same input gives byte-identical output, ids included")
    func deterministic() async {
        await propertyCheck(count: Self.cases, input: Self.seeds) { seed in
            let traffic = RandomTraffic(seed: seed)
            guard let a = try? Self.run(traffic), let b = try? Self.run(traffic) else { Issue.record("run failed"); return }
            #expect(a.jsonl == b.jsonl, "seed \(seed)")
        }
    }

    @Test("P-IDEM-1 re-sending a prefix (copies at new offsets, within the idempotency window) changes nothing")
    func prefixTwice() async {
        await propertyCheck(count: Self.cases, input: Self.seeds, Gen.int(in: 0...1000)) { seed, cut in
            let traffic = RandomTraffic(seed: seed)
            guard let whole = try? Self.run(traffic) else { Issue.record("run failed"); return }
            let k = cut % (traffic.lines.count + 1)
            var d = EngineDriver(profile: Self.profile)
            do {
                for (i, line) in traffic.lines.prefix(k).enumerated() { d.feed(line.record, at: line.at, offset: Int64(i)) }
                let window = Self.profile.idempotency.remember
                let horizon = (d.time ?? Timestamp(millisecondsSinceEpoch: 0)) - window + .minutes(1)
                for (i, line) in traffic.lines.prefix(k).enumerated() where line.at >= horizon {
                    d.feed(line.record, at: line.at, offset: Int64(1_000_000 + i))
                }
                for (i, line) in traffic.lines.enumerated().dropFirst(k) { d.feed(line.record, at: line.at, offset: Int64(i)) }
                try d.run(until: traffic.end.rfc3339)
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
            #expect(d.outputs == whole.outputs, "seed \(seed) cut \(k)")
        }
    }

    @Test("splitting a run anywhere and resuming from the serialised state gives the same output")
    func splitAndResume() async {
        await propertyCheck(count: Self.cases, input: Self.seeds, Gen.int(in: 0...1000)) { seed, cut in
            let traffic = RandomTraffic(seed: seed)
            guard let whole = try? Self.run(traffic) else { Issue.record("run failed"); return }
            let k = cut % (traffic.lines.count + 1)
            var d = EngineDriver(profile: Self.profile)
            do {
                for line in traffic.lines.prefix(k) { d.feed(line.record, at: line.at) }
                #expect(try d.roundTripStates(), "seed \(seed): state changed in a round trip")
                for line in traffic.lines.dropFirst(k) { d.feed(line.record, at: line.at) }
                try d.run(until: traffic.end.rfc3339)
            } catch {
                Issue.record("seed \(seed): \(error)")
            }
            #expect(d.outputs == whole.outputs, "seed \(seed) cut \(k)")
        }
    }
}
