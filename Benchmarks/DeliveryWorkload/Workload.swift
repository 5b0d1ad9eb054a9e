import DeliveryPolicy
import FleetModel
import FleetTestSupport

/// The benchmark's realistic mix (see DeliveryEngineBenchmark), shared with
/// `DeliveryEngineProfile`, a plain executable that runs it under valgrind/perf.
public struct Workload: Sendable {
    public struct Input: Sendable {
        var at: Timestamp
        var user: Int
        var record: FleetRecord
    }

    public struct Result {
        public var decisions = 0
        public var records = 0
        public var idleBytes: [Int] = []
        public var busyBytes: [Int] = []
        /// With `collectingStates`: each user's state after each input it processed (timers
        /// fired before it included), as the runtime writes them to the changelog.
        public var changelog: [DeliveryState] = []
        /// With `digesting`: a fingerprint of every output and every state the run wrote.
        public var digest: WorkloadDigest?
        public init() {}
    }

    let engine: DeliveryEngine
    let inputs: [Input]
    let users: Int
    /// `"u<n>"` for every user, made once: a runtime reads the user id from the record's key
    /// and never formats one, so formatting it per step was harness cost, not engine cost.
    let userIds: [String]
    let busy: Set<Int>
    let end: Timestamp

    /// The workload's records in time order, each with its log time and its user's id (the
    /// record key): what `RuntimeBenchmark` writes into the delivery inbox.
    public var timeline: [(at: Timestamp, userId: String, record: FleetRecord)] {
        inputs.map { ($0.at, userIds[$0.user], $0.record) }
    }

    /// The first `count` records of the mix that `included` keeps, in time order, from a
    /// workload grown until it has that many (the mix averages some seven records per user):
    /// the input of every runtime benchmark, so they all fold the same records.
    public static func firstRecords(
        _ count: Int, including included: (FleetRecord) -> Bool = { _ in true }
    ) -> [(at: Timestamp, userId: String, record: FleetRecord)] {
        var users = max(100, count / 6)
        while true {
            let timeline = make(users: users).timeline.filter { included($0.record) }
            if timeline.count >= count { return Array(timeline.prefix(count)) }
            users = users * 3 / 2
        }
    }

    /// Feeds the whole workload from fresh states; with `measuringState`, also serialises every
    /// final state (outside the decisions/s measurement); with `collectingStates`, keeps every
    /// state written (`Result.changelog`, the state-encoding benchmark's mix); with `digesting`,
    /// fingerprints every output record and every state written (`Result.digest`), so an
    /// optimisation can show that it left every byte alone.
    public func run(measuringState: Bool = false, collectingStates: Bool = false, digesting: Bool = false) -> Result {
        var states = (0..<users).map { engine.initialState(userId: userIds[$0]) }
        var result = Result()
        var digest = WorkloadDigest()
        var offset: Int64 = 0
        // The state is passed `inout` and lent to `nextWakeUp` from there: reading
        // `states[user]` as an argument copied (retained and released) the whole state.
        func step(_ user: Int, _ state: inout DeliveryState, until time: Timestamp, ids: inout OutputIDs) {
            while let due = engine.nextWakeUp(state), due <= time {
                var context = ProcessingContext(now: due, userId: userIds[user], ids: ids)
                engine.fireTimers(state: &state, context: &context)
                ids = context.ids
                count(context.outputs, into: &result)
                if digesting { digest.add(context.outputs, state: state) }
            }
        }
        // Records are lent to the engine from the input array: a runtime owns the record it
        // decoded, so copying each one out of the array (a retain and a release of every
        // string in it) was harness cost.
        for i in inputs.indices {
            let (at, user) = (inputs[i].at, inputs[i].user)
            var ids = OutputIDs(origin: SourceCoordinates(topic: Topics.deliveryInbox, partition: 0, offset: offset))
            offset += 1
            step(user, &states[user], until: at, ids: &ids)
            var context = ProcessingContext(now: at, userId: userIds[user], ids: ids)
            try? engine.process(inputs[i].record, state: &states[user], context: &context)
            count(context.outputs, into: &result)
            if digesting { digest.add(context.outputs, state: states[user]) }
            result.records += 1
            if collectingStates { result.changelog.append(states[user]) }
        }
        for user in 0..<users {
            var ids = OutputIDs(origin: SourceCoordinates(topic: "end", partition: 0, offset: Int64(user)))
            step(user, &states[user], until: end, ids: &ids)
        }
        if digesting { result.digest = digest }
        for user in 0..<users where measuringState {
            let bytes = states[user].serialized().count
            if busy.contains(user) { result.busyBytes.append(bytes) } else { result.idleBytes.append(bytes) }
        }
        return result
    }

    private func count(_ outputs: [OutputRecord], into result: inout Result) {
        for output in outputs { if case .decision = output.record { result.decisions += 1 } }
    }

    public static func make(users: Int) -> Workload {
        let profile: PolicyProfile
        do { profile = try PolicyProfile.shipped("rin") } catch { fatalError("rin profile: \(error)") }
        var rng = SplitMix64(seed: 42)
        let zones = ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Sydney"].compactMap(Zone.init(identifier:))
        let start = Timestamp(rfc3339: "2026-03-02T00:00:00Z") ?? Timestamp(millisecondsSinceEpoch: 0)
        var inputs: [Input] = []
        var busy: Set<Int> = []
        var intentNumber = 0
        func intent(_ user: Int, _ notification: String, _ category: String, _ data: JSONObject) -> FleetRecord {
            intentNumber += 1
            return .intent(Intent(
                id: "i\(intentNumber)", userId: "u\(user)", notification: notification, category: category, data: data,
                source: SourceCoordinates(topic: "rin.upstream", partition: 0, offset: Int64(intentNumber))))
        }
        for user in 0..<users {
            let id = "u\(user)"
            let zone = zones[rng.int(zones.count)]
            let signup = start + .seconds(Int64(rng.int(86_400)))
            inputs.append(Input(at: signup, user: user, record: .userSignedUp(UserSignedUp(id: "s\(user)", userId: id, timeZone: zone))))
            inputs.append(Input(at: signup + .seconds(5), user: user, record: .appOpened(AppOpened(id: "o\(user)", userId: id, entrySource: .organic))))
            let kind = rng.int(100)
            if kind < 80 {
                // Idle: the odd open and the odd intent.
                if rng.int(3) == 0 {
                    inputs.append(Input(at: signup + .hours(Int64(30 + rng.int(30))), user: user,
                                        record: .appOpened(AppOpened(id: "o2\(user)", userId: id, entrySource: .organic))))
                }
                if rng.int(4) == 0 {
                    inputs.append(Input(at: signup + .hours(Int64(20 + rng.int(40))), user: user,
                                        record: intent(user, "contacts.dedup_ready", "CONTACTS", ["count": .int(Int64(1 + rng.int(4)))])))
                }
            } else if kind < 95 {
                busy.insert(user)
                for burst in 0..<(3 + rng.int(5)) {
                    var t = signup + .hours(Int64(6 + burst * 9 + rng.int(6)))
                    for _ in 0..<(3 + rng.int(8)) {
                        t = t + .seconds(Int64(1 + rng.int(8)))
                        if rng.int(2) == 0 {
                            let old = 40 + rng.int(40)
                            inputs.append(Input(at: t, user: user, record: intent(user, "score.updated", "SCORE",
                                ["old": .int(Int64(old)), "new": .int(Int64(old + 2 + rng.int(5))), "label": "Good"])))
                        } else {
                            inputs.append(Input(at: t, user: user, record: intent(user, "contacts.enrichment", "CONTACTS",
                                ["names": ["Alice", "Bob"], "contact_ids": ["c1", "c2"]])))
                        }
                    }
                }
            } else {
                busy.insert(user)
                for n in 0..<(1 + rng.int(4)) {
                    inputs.append(Input(at: signup + .hours(Int64(2 + n * 11)), user: user, record: intent(user, "security.access_request", "SECURITY",
                        ["request_id": .string("q\(user)-\(n)"), "requester_name": "Carol", "field": "email"])))
                }
            }
        }
        inputs.sort { ($0.at, $0.user) < ($1.at, $1.user) }
        return Workload(
            engine: DeliveryEngine(profile: profile), inputs: inputs, users: users, userIds: (0..<users).map { "u\($0)" }, busy: busy,
            end: start + .days(4))
    }
}
