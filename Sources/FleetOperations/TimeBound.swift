public import FleetModel

/// `--since` / `--until`: an RFC 3339 time, or an age before now such as `90m`, `6h`, `2d`.
public enum TimeBound {
    /// An age may be written with a leading minus (`-5h`, "five hours back"), as people type it;
    /// it means the same as `5h`.
    public static func parse(_ text: String, now: Timestamp) -> Timestamp? {
        if let time = Timestamp(rfc3339: text) { return time }
        let age = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard let unit = age.last, let amount = Int64(age.dropLast()), amount >= 0 else { return nil }
        switch unit {
        case "s": return now - .seconds(amount)
        case "m": return now - .minutes(amount)
        case "h": return now - .hours(amount)
        case "d": return now - .days(amount)
        default: return nil
        }
    }

    /// The error text of an inverted or empty range, or nil when `since` is before `until`.
    public static func inverted(since: Timestamp?, until: Timestamp?, names: (String, String) = ("--since", "--until")) -> String? {
        guard let since, let until, since >= until else { return nil }
        return "\(names.0) \(since.rfc3339) is not before \(names.1) \(until.rfc3339): the range is empty (did you swap them?)"
    }
}
