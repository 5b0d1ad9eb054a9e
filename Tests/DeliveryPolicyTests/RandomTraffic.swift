import FleetModel
import FleetTestSupport
import FleetSimulation
import Foundation

/// Random but reproducible inbox traffic for the property tests: one user with a random zone
/// (including 30/45-minute offsets and DST changes), random quiet hours and settings, bursts
/// of intents of every type, opens, dismissals, actions, and sometimes a long absence so
/// quiet mode and the lapse tiers happen.
struct RandomTraffic {
    struct Line {
        /// The line as `fleetctl simulate` would read it (checked to decode when generated).
        var input: SimulationInput
        var intentId: String?
        var notification: String?

        var at: Timestamp { input.at }
    }

    var lines: [Line] = []
    var zone: Zone
    var quietHours: (start: LocalTimeOfDay, end: LocalTimeOfDay)
    var end: Timestamp
    var pushOff: Bool

    static let zones = [
        "UTC", "America/New_York", "Europe/London", "Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe",
        "Pacific/Chatham", "America/St_Johns",
    ]
    static let starts = ["2026-03-04T00:00:00Z", "2026-10-20T00:00:00Z", "2026-03-24T00:00:00Z", "2026-06-01T00:00:00Z"]

    init(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var lines: [Line] = []
        let start = Timestamp(rfc3339: Self.starts[rng.int(Self.starts.count)]) ?? Timestamp(millisecondsSinceEpoch: 0)
        var t = start + .seconds(Int64(rng.int(86_400)))
        var quiet = (LocalTimeOfDay(hour: 22, minute: 0), LocalTimeOfDay(hour: 7, minute: 0))
        let pushOff = rng.int(12) == 0
        func add(_ at: Timestamp, _ value: String, intent: (String, String)? = nil) {
            // Parsed once here; every run of the case feeds the same inputs. The simulator
            // validates each record; `EnginePropertyTests.run` fails a case with a dead letter.
            let n = lines.count
            let isTick = value.contains("\"tick\"")
            let common = "\"v\":1,\"user_id\":\(isTick ? "\"\"" : "\"u1\""),"
                + (intent == nil ? "\"id\":\"r\(n)\"," : "\"source\":{\"topic\":\"rin.upstream\",\"partition\":0,\"offset\":\(n)},")
            let key = isTick ? "" : ",\"key\":\"u1\""
            let line = "{\"at\":\"\(at.rfc3339)\",\"topic\":\"\(Topics.deliveryInbox)\"\(key),\"value\":{" + common + value.dropFirst() + "}"
            do {
                guard let input = try SimulationInput.parse(line, line: n + 1) else {
                    preconditionFailure("RandomTraffic built a blank line")
                }
                lines.append(Line(input: input, intentId: intent?.0, notification: intent?.1))
            } catch {
                preconditionFailure("RandomTraffic built a malformed line \(line): \(error)")
            }
        }
        let zone = Zone(identifier: Self.zones[rng.int(Self.zones.count)]) ?? .utc
        add(t, "{\"type\":\"user.signed_up\",\"time_zone\":\"\(zone.identifier)\"}")
        if rng.int(3) == 0 {
            quiet = (LocalTimeOfDay(hour: rng.int(24), minute: [0, 15, 30, 45][rng.int(4)]), LocalTimeOfDay(hour: rng.int(24), minute: 0))
        }
        var settings = "\"quiet_hours\":{\"start\":\"\(quiet.0)\",\"end\":\"\(quiet.1)\"}"
        if pushOff { settings += ",\"push_enabled\":false" }
        if rng.int(2) == 0 { settings += ",\"premium\":true" }
        if rng.int(5) == 0 { settings += ",\"email_opt_in\":true" }
        if rng.int(8) == 0 { settings += ",\"disabled_categories\":[\"CONTACTS\"]" }
        add(t, "{\"type\":\"user.settings_changed\",\(settings)}")

        let events = 10 + rng.int(30)
        var intentNumber = 0
        for _ in 0..<events {
            // Mostly minutes to hours apart, sometimes a burst (seconds), sometimes weeks away.
            switch rng.int(20) {
            case 0: t = t + .days(Int64(8 + rng.int(50)))
            case 1...7: t = t + .seconds(Int64(rng.int(40)))
            default: t = t + .minutes(Int64(rng.int(600)))
            }
            let local = zone.localDateTime(at: t)
            let roll = rng.int(100)
            if roll < 10 {
                add(t, "{\"type\":\"app.opened\",\"entry_source\":\"organic\"}")
                continue
            } else if roll < 14 {
                let category = ["SCORE", "CONTACTS", "REMINDER", "PREMIUM"][rng.int(4)]
                add(t, "{\"type\":\"notification.dismissed\",\"notification_id\":\"n\(rng.int(1000))\",\"category\":\"\(category)\"}")
                continue
            } else if roll < 16 {
                add(t, "{\"type\":\"user.action\",\"action\":\"note.created\"}")
                continue
            } else if roll < 18 {
                add(t, "{\"type\":\"tick\"}")
                continue
            }
            intentNumber += 1
            let id = "i\(intentNumber)"
            let (notification, category, data, expires) = Self.randomIntent(&rng, local: local, zone: zone)
            let expiry = expires.map { ",\"expires_at\":\"\($0.rfc3339)\"" } ?? ""
            add(t, "{\"type\":\"intent\",\"id\":\"\(id)\",\"notification\":\"\(notification)\",\"category\":\"\(category)\",\"data\":\(data)\(expiry)}", intent: (id, notification))
        }
        self.lines = lines
        self.zone = zone
        self.quietHours = quiet
        self.pushOff = pushOff
        self.end = t + .days(3)
    }

    static func randomIntent(_ rng: inout SplitMix64, local: LocalDateTime, zone: Zone) -> (String, String, String, Timestamp?) {
        let names = ["Alice", "Bob", "Cid", "Dee", "Eve", "Fay"]
        switch rng.int(11) {
        case 0, 1:
            let old = rng.int(100), new = rng.int(100)
            return ("score.updated", "SCORE", "{\"old\":\(old),\"new\":\(new),\"label\":\"Good\"}", nil)
        case 2:
            let labels = [("Building", 30), ("Good", 60), ("Strong", 80)]
            let (label, threshold) = labels[rng.int(3)]
            return ("score.milestone", "SCORE", "{\"label\":\"\(label)\",\"threshold\":\(threshold),\"score\":\(threshold + 1)}", nil)
        case 3, 4:
            let n = 1 + rng.int(3)
            let picked = (0..<n).map { _ in rng.int(names.count) }
            let list = picked.map { "\"\(names[$0])\"" }.joined(separator: ",")
            let ids = picked.map { "\"c\($0)\"" }.joined(separator: ",")
            return ("contacts.enrichment", "CONTACTS", "{\"names\":[\(list)],\"contact_ids\":[\(ids)]}", nil)
        case 5:
            return ("contacts.dedup_ready", "CONTACTS", "{\"count\":\(1 + rng.int(5))}", nil)
        case 6:
            return ("contacts.sync_conflict", "CONTACTS", "{\"count\":1,\"contact_ids\":[\"c\(rng.int(6))\"]}", nil)
        case 7:
            let c = rng.int(names.count)
            let midnight = zone.startOfDay(local.date.adding(days: 1))
            return ("reminder.birthday", "REMINDER", "{\"reminder_id\":\"rb\(c)\",\"contact_id\":\"c\(c)\",\"contact_name\":\"\(names[c])\"}", midnight)
        case 8:
            let c = rng.int(names.count)
            return ("reminder.followup", "REMINDER", "{\"reminder_id\":\"rf\(c)\",\"contact_id\":\"c\(c)\",\"contact_name\":\"\(names[c])\",\"note\":\"call\",\"scheduled_local\":\"\(local)\"}", nil)
        case 9:
            return ("security.access_request", "SECURITY", "{\"request_id\":\"q\(rng.int(1000))\",\"requester_name\":\"Carol\",\"field\":\"email\"}", nil)
        default:
            return ("premium.who_viewed", "PREMIUM", "{\"count\":\(1 + rng.int(4))}", nil)
        }
    }

}

