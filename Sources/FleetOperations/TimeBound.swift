public import FleetModel

/// `--since` / `--until`: an RFC 3339 time, or an age before now such as `90m`, `6h`, `2d`.
public enum TimeBound {
    public static func parse(_ text: String, now: Timestamp) -> Timestamp? {
        if let time = Timestamp(rfc3339: text) { return time }
        guard let unit = text.last, let amount = Int64(text.dropLast()), amount >= 0 else { return nil }
        switch unit {
        case "s": return now - .seconds(amount)
        case "m": return now - .minutes(amount)
        case "h": return now - .hours(amount)
        case "d": return now - .days(amount)
        default: return nil
        }
    }
}
