import FleetModel
import FleetSimulation
import FleetTestSupport

/// Many users on one inbox partition, each with a busy stream of intents (issue 15: "200
/// users, ~40 intents per user per day"), spread over the whole local day so quiet hours defer
/// many of them, with opens, dismissals and some users who turned push off. Days over the
/// digest threshold (P-BUD-5) are the rule, not the exception, so digests compete with the
/// deferrals released at the end of quiet hours for the next day's budget.
///
/// Reproducible from its seed; every line is a `fleetctl simulate` input line (`jsonl`), so the
/// same traffic can be run through any build of `fleetctl simulate`.
struct BusyTraffic {
    var inputs: [SimulationInput] = []
    var end: Timestamp

    init(seed: UInt64, users: Int, days: Int, intentsPerDay: Int = 40) {
        var rng = SplitMix64(seed: seed)
        let start = Timestamp(rfc3339: "2026-03-02T00:00:00Z") ?? Timestamp(millisecondsSinceEpoch: 0)
        var events: [(at: Timestamp, user: Int, value: String)] = []
        var intentNumber = 0
        for user in 0..<users {
            let zone = Zone(identifier: RandomTraffic.zones[rng.int(RandomTraffic.zones.count)]) ?? .utc
            // Signed up the day before, so day-one limits (P-BUD-6) do not apply.
            let signup = start - .days(1) + .minutes(Int64(rng.int(600)))
            events.append((signup, user, "{\"type\":\"user.signed_up\",\"time_zone\":\"\(zone.identifier)\"}"))
            var settings: [String] = []
            if rng.int(10) == 0 { settings.append("\"push_enabled\":false") }
            if rng.int(4) == 0 { settings.append("\"premium\":true") }
            if !settings.isEmpty {
                events.append((signup, user, "{\"type\":\"user.settings_changed\",\(settings.joined(separator: ","))}"))
            }
            for day in 0..<days {
                let dayStart = start + .days(Int64(day))
                for _ in 0..<(intentsPerDay - 5 + rng.int(11)) {
                    let at = dayStart + .seconds(Int64(rng.int(86_400)))
                    intentNumber += 1
                    let (notification, category, data, expires) = RandomTraffic.randomIntent(
                        &rng, local: zone.localDateTime(at: at), zone: zone)
                    let expiry = expires.map { ",\"expires_at\":\"\($0.rfc3339)\"" } ?? ""
                    events.append((at, user, "{\"type\":\"intent\",\"id\":\"b\(intentNumber)\",\"notification\":\"\(notification)\",\"category\":\"\(category)\",\"data\":\(data)\(expiry)}"))
                }
                // About every other day an open (P-BUD-5 skips a pending digest), now and then dismissals.
                if rng.int(2) == 0 {
                    events.append((dayStart + .seconds(Int64(rng.int(86_400))), user, "{\"type\":\"app.opened\",\"entry_source\":\"organic\"}"))
                }
                if rng.int(6) == 0 {
                    let category = ["SCORE", "CONTACTS", "PREMIUM"][rng.int(3)]
                    for k in 0..<3 {
                        events.append((dayStart + .hours(Int64(9 + k)), user, "{\"type\":\"notification.dismissed\",\"notification_id\":\"n\",\"category\":\"\(category)\"}"))
                    }
                }
            }
        }
        // Log order: by time, then by user and generation order (a stable sort keeps the latter).
        let ordered = events.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        for (n, event) in ordered.enumerated() {
            let isIntent = event.value.hasPrefix("{\"type\":\"intent\"")
            let common = "\"v\":1,\"user_id\":\"u\(event.user)\","
                + (isIntent ? "\"source\":{\"topic\":\"rin.upstream\",\"partition\":0,\"offset\":\(n)}," : "\"id\":\"r\(n)\",")
            let line = "{\"at\":\"\(event.at.rfc3339)\",\"topic\":\"\(Topics.deliveryInbox)\",\"key\":\"u\(event.user)\",\"value\":{"
                + common + event.value.dropFirst() + "}"
            do {
                guard let input = try SimulationInput.parse(line, line: n + 1) else { preconditionFailure("BusyTraffic built a blank line") }
                inputs.append(input)
            } catch {
                preconditionFailure("BusyTraffic built a malformed line \(line): \(error)")
            }
        }
        end = start + .days(Int64(days + 2))
    }
}
