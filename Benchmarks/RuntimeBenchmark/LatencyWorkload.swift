import DeliveryWorkload
import FleetModel
import Kafka

/// The inbox records of the security-latency mode: `InboxFill`'s realistic mix without its own
/// security intents, with `security` access-request intents (`security.access_request`,
/// category SECURITY: delivered at once, P-BUD-1 / P-ACC-1) spread evenly through it. Every
/// SECURITY delivery of the run is therefore one of the marked intents, named by id in the
/// delivery's `merged_intents`.
///
/// The mix's first `warmUp` records come first, with security intents at the burst's density
/// (ids `warmup-…`, not measured): they warm the worker up (its producer's first transaction or
/// acknowledgements and first writes to each output topic, its consumers' first fetches) so the
/// burst measures a running worker, not a starting one.
struct LatencyWorkload {
    /// The warm-up, then the measured burst; in produce order, logical topic names, timestamps
    /// unset (the producer stamps each record with the wall clock when it sends it).
    var records: [ProducerRecord]
    /// Where the measured burst starts in `records`.
    var burstStart: Int
    /// Positions in `records` of the burst's security intents, with each one's intent id.
    var security: [Int: String]
    /// The ids of the warm-up's security intents.
    var warmUpSecurity: Set<String>

    /// The measured burst.
    var burst: ArraySlice<ProducerRecord> { records[burstStart...] }

    /// - Parameters:
    ///   - warmUp: records before the burst.
    ///   - count: records of the burst, `security` of them the marked intents.
    ///   - security: marked intents, at burst positions ⌊(k + ½)·count/security⌋ for
    ///     k = 0..<security; each is for the user of the mix record it is placed before (a user
    ///     active then).
    init(warmUp: Int, count: Int, security: Int) {
        precondition(warmUp >= 0 && security >= 0 && security <= count, "0 ≤ warmUp, 0 ≤ security ≤ count")
        let warmUpSecurity = security == 0 ? 0 : Int((Double(warmUp) * Double(security) / Double(count)).rounded(.up))
        func spread(_ number: Int, over length: Int, from start: Int) -> Set<Int> {
            Set((0..<number).map { start + Int((Double($0) + 0.5) * Double(length) / Double(number)) })
        }
        let warmUpPositions = spread(warmUpSecurity, over: warmUp, from: 0)
        let positions = spread(security, over: count, from: warmUp)
        let background = Workload.firstRecords(warmUp + count - security - warmUpSecurity) { !Self.isSecurity($0) }
        var records: [ProducerRecord] = []
        records.reserveCapacity(warmUp + count)
        var marked: [Int: String] = [:]
        var warmUpIds: Set<String> = []
        var next = background.startIndex
        for position in 0..<(warmUp + count) {
            let measured = positions.contains(position)
            if measured || warmUpPositions.contains(position) {
                let number = measured ? marked.count : warmUpIds.count
                let user = background.isEmpty ? "u0" : background[min(next, background.count - 1)].userId
                let id = "\(measured ? "latency" : "warmup")-\(number)"
                let intent = FleetRecord.intent(Intent(
                    id: id, userId: user, notification: "security.access_request", category: "SECURITY",
                    data: ["request_id": .string(id + "-q"), "requester_name": "Carol", "field": "email"],
                    source: SourceCoordinates(topic: Topics.accessRequests, partition: 0, offset: Int64(number))))
                records.append(ProducerRecord(topic: Topics.deliveryInbox, key: user, value: RecordCodec.encode(intent)))
                if measured { marked[position] = id } else { warmUpIds.insert(id) }
            } else {
                let (_, user, record) = background[next]
                records.append(ProducerRecord(topic: Topics.deliveryInbox, key: user, value: RecordCodec.encode(record)))
                next += 1
            }
        }
        self.records = records
        self.burstStart = warmUp
        self.security = marked
        self.warmUpSecurity = warmUpIds
    }

    /// Whether `record` is an intent the engine delivers as SECURITY.
    static func isSecurity(_ record: FleetRecord) -> Bool {
        if case .intent(let intent) = record { return intent.category.uppercased() == "SECURITY" }
        return false
    }
}
