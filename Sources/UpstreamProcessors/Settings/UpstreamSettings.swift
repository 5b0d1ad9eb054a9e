public import FleetModel

/// Every number the four upstream workers decide with (POLICY.md §4, P-PROF-1).
///
/// Loaded from the top-level `upstream:` section of a policy profile file
/// (`UpstreamSettings.load(profileYAML:)`); `rin` holds the shipped defaults. The field names
/// of the YAML are the `CodingKeys` below, so encoding a value gives a valid `upstream:` block.
public struct UpstreamSettings: Codable, Hashable, Sendable {
    public var score: ScoreSettings
    public var sync: SyncSettings
    public var reminders: ReminderSettings
    public var access: AccessSettings

    public init(score: ScoreSettings, sync: SyncSettings, reminders: ReminderSettings, access: AccessSettings) {
        self.score = score; self.sync = sync; self.reminders = reminders; self.access = access
    }

    /// The `rin` profile's values (POLICY.md §4 and the score spec §2).
    public static let rin = UpstreamSettings(score: .rin, sync: .rin, reminders: .rin, access: .rin)
}

/// Score worker settings (P-SCO-1…6).
public struct ScoreSettings: Codable, Hashable, Sendable {
    /// P-SCO-2/4: a `score.updated` (and the score-changed item) needs |new − last notified| ≥ this.
    public var changeThreshold: Int
    /// P-SCO-3: quality labels by lower bound, ascending; the first starts at 0.
    public var labels: [ScoreLabelBand]
    /// P-SCO-5: this many consecutive falling calculations make a declining run.
    public var decliningRunLength: Int
    /// P-SCO-4: the "Score Changed" item disappears this many hours after it was refreshed.
    public var sectionExpiryHours: Int
    /// P-SCO-6: thresholds that choose the explainability sentence.
    public var explainability: ExplainabilitySettings

    enum CodingKeys: String, CodingKey {
        case changeThreshold = "change_threshold", labels, decliningRunLength = "declining_run_length"
        case sectionExpiryHours = "section_expiry_hours", explainability
    }

    public init(
        changeThreshold: Int, labels: [ScoreLabelBand], decliningRunLength: Int, sectionExpiryHours: Int,
        explainability: ExplainabilitySettings
    ) {
        self.changeThreshold = changeThreshold; self.labels = labels; self.decliningRunLength = decliningRunLength
        self.sectionExpiryHours = sectionExpiryHours; self.explainability = explainability
    }

    public static let rin = ScoreSettings(
        changeThreshold: 2,
        labels: [
            ScoreLabelBand(name: "New", from: 0), ScoreLabelBand(name: "Building", from: 30),
            ScoreLabelBand(name: "Good", from: 60), ScoreLabelBand(name: "Strong", from: 80),
        ],
        decliningRunLength: 3,
        sectionExpiryHours: 48,
        explainability: .rin)
}

/// A score quality label and the lowest score that earns it (score spec §2, SC1).
public struct ScoreLabelBand: Codable, Hashable, Sendable {
    public var name: String
    /// The label's lower bound; also the number a milestone names ("reached Good (60)").
    public var from: Int

    public init(name: String, from: Int) { self.name = name; self.from = from }
}

/// Which explainability sentence of the score spec §5 a score gets (P-SCO-6). The rules are
/// tried in order: building (score below `buildingBelow`), trust penalty, quality low, then
/// the strongest of quality / position / stability.
public struct ExplainabilitySettings: Codable, Hashable, Sendable {
    /// "New user, building" applies to scores below this (the `New` label's range by default).
    public var buildingBelow: Int
    /// "Trust penalty active" applies when the trust component is below this.
    public var trustPenaltyBelow: Int
    /// "Quality low, many one-way" applies when the quality component is below this.
    public var qualityLowBelow: Int

    enum CodingKeys: String, CodingKey {
        case buildingBelow = "building_below", trustPenaltyBelow = "trust_penalty_below"
        case qualityLowBelow = "quality_low_below"
    }

    public init(buildingBelow: Int, trustPenaltyBelow: Int, qualityLowBelow: Int) {
        self.buildingBelow = buildingBelow; self.trustPenaltyBelow = trustPenaltyBelow
        self.qualityLowBelow = qualityLowBelow
    }

    public static let rin = ExplainabilitySettings(buildingBelow: 30, trustPenaltyBelow: 40, qualityLowBelow: 40)
}

/// Sync worker settings (P-SYN-1…5).
public struct SyncSettings: Codable, Hashable, Sendable {
    /// P-SYN-5: the accumulating-dedup reminder needs at least this many unreviewed suggestions…
    public var dedupAccumulationCount: Int
    /// …the oldest of them at least this many days old.
    public var dedupAccumulationMinAgeDays: Int
    /// How many recent `sync_id`s a user's state remembers, so a re-delivered sync result is
    /// ignored. A repeat older than this many later syncs would be processed again.
    public var rememberedSyncIds: Int

    enum CodingKeys: String, CodingKey {
        case dedupAccumulationCount = "dedup_accumulation_count"
        case dedupAccumulationMinAgeDays = "dedup_accumulation_min_age_days"
        case rememberedSyncIds = "remembered_sync_ids"
    }

    public init(dedupAccumulationCount: Int, dedupAccumulationMinAgeDays: Int, rememberedSyncIds: Int) {
        self.dedupAccumulationCount = dedupAccumulationCount
        self.dedupAccumulationMinAgeDays = dedupAccumulationMinAgeDays
        self.rememberedSyncIds = rememberedSyncIds
    }

    public static let rin = SyncSettings(dedupAccumulationCount: 10, dedupAccumulationMinAgeDays: 14, rememberedSyncIds: 64)
}

/// Reminder worker settings (P-REM-1…4).
public struct ReminderSettings: Codable, Hashable, Sendable {
    /// P-REM-1: birthdays fire at this local time on the day.
    public var birthdayTime: LocalTimeOfDay
    /// P-REM-3: a birthday this many local days ahead (or fewer) gets an "Upcoming" item.
    public var upcomingWindowDays: Int
    /// The most reminders one user may have; an upsert of a new reminder beyond it is
    /// dead-lettered. Keeps every per-user operation O(bound).
    public var maxPerUser: Int
    /// A follow-up whose time has passed by at most this many minutes when it is scheduled (or
    /// when its timer finally runs) still fires; older occurrences are skipped. Birthdays stay
    /// valid until the local midnight that ends their day (P-EXP-1).
    public var followupLateGraceMinutes: Int

    enum CodingKeys: String, CodingKey {
        case birthdayTime = "birthday_time", upcomingWindowDays = "upcoming_window_days"
        case maxPerUser = "max_per_user", followupLateGraceMinutes = "followup_late_grace_minutes"
    }

    public init(birthdayTime: LocalTimeOfDay, upcomingWindowDays: Int, maxPerUser: Int, followupLateGraceMinutes: Int) {
        self.birthdayTime = birthdayTime; self.upcomingWindowDays = upcomingWindowDays
        self.maxPerUser = maxPerUser; self.followupLateGraceMinutes = followupLateGraceMinutes
    }

    public static let rin = ReminderSettings(
        birthdayTime: LocalTimeOfDay(hour: 9, minute: 0), upcomingWindowDays: 7, maxPerUser: 500,
        followupLateGraceMinutes: 60)
}

/// Access worker settings (P-ACC-1).
public struct AccessSettings: Codable, Hashable, Sendable {
    /// How many recent request ids (and security alert ids) a user's state remembers, so the
    /// same request twice gives one notification. A repeat arriving after this many newer
    /// distinct requests would notify again.
    public var rememberedRequestIds: Int

    enum CodingKeys: String, CodingKey { case rememberedRequestIds = "remembered_request_ids" }

    public init(rememberedRequestIds: Int) { self.rememberedRequestIds = rememberedRequestIds }

    public static let rin = AccessSettings(rememberedRequestIds: 256)
}
