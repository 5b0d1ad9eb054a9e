import FleetModel
import FleetTestSupport
import PropertyBased
import SenderCore
import Testing

/// Invariants of the sender's fold over random traffic: copies of deliveries, device churn,
/// every kind of provider answer, repeated answers, time passing (issue 17).
@Suite struct SenderPropertyTests {
    static let seeds = Gen.uint64(in: 0...UInt64.max)

    /// What one random run produced.
    struct Run: Equatable {
        var outputs: [OutputRecord]
        var state: SenderState
        var deliveryIds: Set<String>
        var answers: [(attempt: SendAttempt, outcome: SendOutcome)]
        static func == (a: Run, b: Run) -> Bool { a.outputs == b.outputs && a.state == b.state }
    }

    /// A seeded run: the traffic and the provider's answers are a function of `seed` alone.
    static func run(seed: UInt64) -> Run {
        var random = SplitMix64(seed: seed)
        var h = SenderHarness(policy: SenderPolicy(maximumAge: .hours(2)))
        var pending: [SendAttempt] = []
        var answered: [SendAttempt] = []
        var answers: [(SendAttempt, SendOutcome)] = []
        var deliveryIds: Set<String> = []
        let platforms: [DevicePlatform] = [.ios, .android, .email]
        let types = ["fitcircle.daily_checkin", "fitcircle.leaderboard_change"]
        let outcomes: [SendOutcome] = [.accepted, .accepted, .retryable, .retryable, .invalidToken, .rejected, .credentialsExpired]

        func collect(_ outputs: [OutputRecord]) { pending += SenderHarness.attempts(in: outputs) }

        for _ in 0..<random.int(60) + 10 {
            switch random.int(10) {
            case 0:
                let id = "dev\(random.int(4))"
                collect(h.apply(SenderHarness.device(id, platforms[random.int(3)], token: "t\(random.int(6))")))
            case 1:
                collect(h.apply(random.int(4) == 0 ? SenderHarness.unregister("dev\(random.int(4))")
                    : SenderHarness.settings(pushEnabled: random.int(5) != 0, emailOptIn: random.int(2) == 0)))
            case 2, 3:
                // Few ids, so copies are common.
                let id = "d\(random.int(8))"
                deliveryIds.insert(id)
                collect(h.apply(SenderHarness.delivery(
                    id, channel: random.int(5) == 0 ? .email : .push, notification: types[random.int(2)])))
            case 4, 5, 6:
                guard !pending.isEmpty else { continue }
                let attempt = pending.remove(at: random.int(pending.count))
                let outcome = outcomes[random.int(outcomes.count)]
                answers.append((attempt, outcome))
                answered.append(attempt)
                collect(h.answer(attempt, outcome, status: outcome == .retryable && random.int(2) == 0 ? 429 : nil))
            case 7:
                // A copy of an answer already given (the effect stage re-ran after a crash).
                guard !answers.isEmpty else { continue }
                let (attempt, outcome) = answers[random.int(answers.count)]
                collect(h.answer(attempt, outcome))
            default:
                collect(h.advance(by: .seconds(Int64(random.int(900)))))
            }
        }
        // Drain: the provider now accepts everything, and time runs past every maximum age.
        for _ in 0..<20 {
            while let attempt = pending.first {
                pending.removeFirst()
                answers.append((attempt, .accepted))
                collect(h.answer(attempt, .accepted))
            }
            collect(h.advance(by: .minutes(40)))
        }
        return Run(outputs: h.outputs, state: h.state, deliveryIds: deliveryIds, answers: answers)
    }

    @Test func theSameInputGivesTheSameOutputAndState() async {
        await propertyCheck(count: 60, input: Self.seeds) { seed in
            let first = Self.run(seed: seed), second = Self.run(seed: seed)
            #expect(first == second)
            let bytes = try? CanonicalJSONEncoder.encode(first.state)
            #expect(bytes != nil && bytes == (try? CanonicalJSONEncoder.encode(second.state)))
        }
    }

    /// Each delivery id and device is accepted at most once: after an acceptance the fold
    /// never emits another attempt for the pair, and attempt ids are never reused.
    @Test func noDeliveryIsSentTwiceToADevice() async {
        await propertyCheck(count: 150, input: Self.seeds) { seed in
            let run = Self.run(seed: seed)
            let attempts = SenderHarness.attempts(in: run.outputs)
            #expect(Set(attempts.map(\.id)).count == attempts.count)
            let accepted = Set(run.answers.filter { $0.outcome == .accepted }.map(\.attempt.id))
            var seenAccepted: Set<String> = []
            for output in run.outputs {
                guard case .sender(.attempt(let attempt)) = output.record else { continue }
                let pair = "\(attempt.deliveryId)|\(attempt.provider)|\(attempt.deviceId)"
                #expect(!seenAccepted.contains(pair), "attempt \(attempt.id) after an accepted one")
                if accepted.contains(attempt.id) { seenAccepted.insert(pair) }
                #expect(attempt.id.hasPrefix(attempt.deliveryId + "~"))
            }
        }
    }

    /// A token a provider declared dead is never used again, whatever registrations follow.
    @Test func anInvalidatedTokenIsNeverTriedAgain() async {
        await propertyCheck(count: 150, input: Self.seeds) { seed in
            let run = Self.run(seed: seed)
            var tokenOfAttempt: [String: String] = [:]
            var dead: Set<String> = []
            for output in run.outputs {
                switch output.record {
                case .sender(.attempt(let attempt)):
                    #expect(!dead.contains(attempt.token), "attempt \(attempt.id) to dead token \(attempt.token)")
                    tokenOfAttempt[attempt.id] = attempt.token
                case .sender(.deviceInvalidated(let invalidation)):
                    if let token = tokenOfAttempt[invalidation.attemptId] { dead.insert(token) }
                default:
                    break
                }
            }
        }
    }

    /// Every delivery ends with exactly one receipt for its channel (and one for email after a
    /// fallback), and nothing is left in progress once answers came and time passed.
    @Test func everyDeliveryGetsOneFinalReceiptPerChannel() async {
        await propertyCheck(count: 150, input: Self.seeds) { seed in
            let run = Self.run(seed: seed)
            #expect(run.state.deliveries.isEmpty)
            var receipts: [String: [Receipt]] = [:]
            for output in run.outputs {
                if case .sender(.receipt(let receipt)) = output.record { receipts[receipt.deliveryId, default: []].append(receipt) }
            }
            #expect(Set(receipts.keys) == run.deliveryIds)
            for (id, list) in receipts {
                let channels = list.map(\.channel)
                #expect(Set(channels).count == channels.count, "\(id): \(list.map(\.status))")
                let fellBack = list.contains { $0.status == .fellBack }
                #expect(list.count == (fellBack ? 2 : 1), "\(id): \(list.map(\.status))")
                if fellBack { #expect(list.last?.channel == .email) }
            }
        }
    }
}
