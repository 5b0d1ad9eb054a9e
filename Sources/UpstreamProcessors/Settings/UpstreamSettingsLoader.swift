import FleetModel
import Yams

extension UpstreamSettings {
    /// Reads the top-level `upstream:` section of a policy profile file and ignores the rest
    /// (other sections belong to the delivery engine).
    ///
    /// A missing section, or a missing field, takes the `rin` default; every field that is
    /// present is validated, and unknown fields are refused so a typo cannot silently fall back
    /// to a default.
    public static func load(profileYAML: String) throws(UpstreamSettingsError) -> UpstreamSettings {
        let root: Node?
        do {
            root = try Yams.compose(yaml: profileYAML)
        } catch {
            throw UpstreamSettingsError("policy profile is not valid YAML: \(error)")
        }
        guard let root else { return .rin }
        guard let top = root.mapping else { throw UpstreamSettingsError("policy profile must be a mapping at the top level") }
        guard let section = top["upstream"] else { return .rin }
        let upstream = try SettingsReader(section, path: "upstream")
        try upstream.allowOnly(["score", "sync", "reminders", "access"])

        var settings = UpstreamSettings.rin
        if let score = try upstream.child("score") { settings.score = try ScoreSettings.read(score) }
        if let sync = try upstream.child("sync") { settings.sync = try SyncSettings.read(sync) }
        if let reminders = try upstream.child("reminders") { settings.reminders = try ReminderSettings.read(reminders) }
        if let access = try upstream.child("access") { settings.access = try AccessSettings.read(access) }
        return settings
    }
}

extension ScoreSettings {
    fileprivate static func read(_ reader: SettingsReader) throws(UpstreamSettingsError) -> ScoreSettings {
        try reader.allowOnly(["change_threshold", "labels", "declining_run_length", "section_expiry_hours", "explainability"])
        var s = ScoreSettings.rin
        if let v = try reader.int("change_threshold", 1...100) { s.changeThreshold = v }
        if let v = try reader.int("declining_run_length", 1...365) { s.decliningRunLength = v }
        if let v = try reader.int("section_expiry_hours", 1...8760) { s.sectionExpiryHours = v }
        if let labels = try reader.sequence("labels") { s.labels = try readLabels(labels) }
        if let e = try reader.child("explainability") {
            try e.allowOnly(["building_below", "trust_penalty_below", "quality_low_below"])
            if let v = try e.int("building_below", 0...101) { s.explainability.buildingBelow = v }
            if let v = try e.int("trust_penalty_below", 0...101) { s.explainability.trustPenaltyBelow = v }
            if let v = try e.int("quality_low_below", 0...101) { s.explainability.qualityLowBelow = v }
        }
        return s
    }

    /// P-SCO-3 labels: at least one, the first from 0, strictly ascending bounds within 0–100,
    /// distinct non-empty names.
    private static func readLabels(_ items: [SettingsReader]) throws(UpstreamSettingsError) -> [ScoreLabelBand] {
        if items.isEmpty { throw UpstreamSettingsError("upstream.score.labels: must list at least one label") }
        var bands: [ScoreLabelBand] = []
        for item in items {
            try item.allowOnly(["name", "from"])
            guard let name = try item.string("name"), !name.isEmpty else { throw item.problem("name", "is required and must not be empty") }
            guard let from = try item.int("from", 0...100) else { throw item.problem("from", "is required (the label's lowest score)") }
            if let previous = bands.last, from <= previous.from {
                throw item.problem("from", "is \(from), but labels must be listed with strictly rising 'from' (previous: \(previous.from))")
            }
            if bands.isEmpty && from != 0 { throw item.problem("from", "is \(from), but the first label must start at 0") }
            if bands.contains(where: { $0.name == name }) { throw item.problem("name", "'\(name)' is used by two labels") }
            bands.append(ScoreLabelBand(name: name, from: from))
        }
        return bands
    }
}

extension SyncSettings {
    fileprivate static func read(_ reader: SettingsReader) throws(UpstreamSettingsError) -> SyncSettings {
        try reader.allowOnly(["dedup_accumulation_count", "dedup_accumulation_min_age_days", "remembered_sync_ids"])
        var s = SyncSettings.rin
        if let v = try reader.int("dedup_accumulation_count", 1...100_000) { s.dedupAccumulationCount = v }
        if let v = try reader.int("dedup_accumulation_min_age_days", 0...3650) { s.dedupAccumulationMinAgeDays = v }
        if let v = try reader.int("remembered_sync_ids", 1...10_000) { s.rememberedSyncIds = v }
        return s
    }
}

extension ReminderSettings {
    fileprivate static func read(_ reader: SettingsReader) throws(UpstreamSettingsError) -> ReminderSettings {
        try reader.allowOnly(["birthday_time", "upcoming_window_days", "max_per_user", "followup_late_grace_minutes"])
        var s = ReminderSettings.rin
        if let text = try reader.string("birthday_time") {
            guard let time = LocalTimeOfDay(Substring(text)) else {
                throw reader.problem("birthday_time", "must be a local time \"HH:MM\" (00:00–23:59), got '\(text)'")
            }
            s.birthdayTime = time
        }
        if let v = try reader.int("upcoming_window_days", 0...366) { s.upcomingWindowDays = v }
        if let v = try reader.int("max_per_user", 1...100_000) { s.maxPerUser = v }
        if let v = try reader.int("followup_late_grace_minutes", 0...10_080) { s.followupLateGraceMinutes = v }
        return s
    }
}

extension AccessSettings {
    fileprivate static func read(_ reader: SettingsReader) throws(UpstreamSettingsError) -> AccessSettings {
        try reader.allowOnly(["remembered_request_ids"])
        var s = AccessSettings.rin
        if let v = try reader.int("remembered_request_ids", 1...100_000) { s.rememberedRequestIds = v }
        return s
    }
}

/// A YAML mapping at a known path, with typed field access whose errors name the full path
/// and the line.
private struct SettingsReader {
    let mapping: Node.Mapping
    let path: String
    let line: Int?

    init(_ node: Node, path: String) throws(UpstreamSettingsError) {
        guard let mapping = node.mapping else {
            throw UpstreamSettingsError("\(path): must be a mapping of settings\(Self.at(node.mark?.line))")
        }
        self.mapping = mapping
        self.path = path
        self.line = node.mark?.line
    }

    private static func at(_ line: Int?) -> String { line.map { " (line \($0))" } ?? "" }

    func problem(_ key: String, _ text: String) -> UpstreamSettingsError {
        UpstreamSettingsError("\(path).\(key): \(text)\(Self.at(mapping[key]?.mark?.line ?? line))")
    }

    func allowOnly(_ known: [String]) throws(UpstreamSettingsError) {
        for key in mapping.keys {
            guard let name = key.string, known.contains(name) else {
                throw UpstreamSettingsError(
                    "\(path).\(key.string ?? "?"): unknown setting (known: \(known.joined(separator: ", ")))\(Self.at(key.mark?.line))")
            }
        }
    }

    func child(_ key: String) throws(UpstreamSettingsError) -> SettingsReader? {
        guard let node = mapping[key] else { return nil }
        return try SettingsReader(node, path: "\(path).\(key)")
    }

    func sequence(_ key: String) throws(UpstreamSettingsError) -> [SettingsReader]? {
        guard let node = mapping[key] else { return nil }
        guard let items = node.sequence else { throw problem(key, "must be a list") }
        var readers: [SettingsReader] = []
        for (index, item) in items.enumerated() {
            readers.append(try SettingsReader(item, path: "\(path).\(key)[\(index)]"))
        }
        return readers
    }

    func int(_ key: String, _ range: ClosedRange<Int>) throws(UpstreamSettingsError) -> Int? {
        guard let node = mapping[key] else { return nil }
        guard let text = node.scalar?.string, let value = Int(text) else {
            throw problem(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \(describe(node))")
        }
        guard range.contains(value) else {
            throw problem(key, "is \(value), outside \(range.lowerBound)–\(range.upperBound)")
        }
        return value
    }

    func string(_ key: String) throws(UpstreamSettingsError) -> String? {
        guard let node = mapping[key] else { return nil }
        guard let text = node.scalar?.string else { throw problem(key, "must be a text value, got \(describe(node))") }
        return text
    }

    private func describe(_ node: Node) -> String {
        if let text = node.scalar?.string { return "'\(text)'" }
        if node.mapping != nil { return "a mapping" }
        return "a list"
    }
}
