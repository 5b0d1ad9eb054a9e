public import FleetModel

/// Every number, catalog entry and line of copy the delivery engine uses (P-PROF-1).
///
/// The engine holds no policy constants of its own: two products (`rin`, `fitcircle`) run the
/// same code with different profiles, and replay can answer "what would have happened" under
/// another profile. Load one with `PolicyProfile.load(yaml:)`, `load(contentsOf:)` or
/// `shipped(_:)`; loading validates every field.
public struct PolicyProfile: Hashable, Sendable {
    public var name: String
    public var budget: Budget
    public var dayOne: DayOne
    public var coalescing: Coalescing
    public var duplicateContent: DuplicateContent
    public var idempotency: Idempotency
    public var cooldown: Cooldown
    public var quietHours: QuietHours
    public var digest: Digest
    public var lapse: Lapse
    public var welcomeBack: WelcomeBack
    public var activity: Activity
    public var weekendPause: WeekendPause
    /// Per smart section: how long its items live (P-SEC-1), by section name.
    public var sections: [String: SectionPolicy]
    public var categories: [String: CategoryPolicy]
    public var catalog: [String: NotificationType]
    /// Derived when loading: how far back delivery history must reach (the longest window any
    /// rule reads), so state keeps no more than that.
    public internal(set) var historyHorizon: TimeSpan = .days(7)

    /// P-BUD-1, P-BUD-3.
    public struct Budget: Hashable, Sendable {
        /// Non-security deliveries per local day.
        public var dailyLimit: Int
        /// Notifications of this rank or higher (less important) may not take the day's last
        /// slot (P-BUD-3); nil disables the reservation.
        public var lastSlotExcludedFromRank: Int?
    }

    /// P-BUD-6: what may be pushed on the local day of sign-up.
    public struct DayOne: Hashable, Sendable {
        public struct Limit: Hashable, Sendable {
            public var types: [String]
            public var max: Int
        }
        public var limits: [Limit]
        /// Whether the day-one rule is in force at all.
        public var enabled: Bool { !limits.isEmpty }
    }

    /// P-COAL-1.
    public struct Coalescing: Hashable, Sendable {
        public var window: TimeSpan
    }

    /// P-DUP-1.
    public struct DuplicateContent: Hashable, Sendable {
        public var window: TimeSpan
    }

    /// P-IDEM-1: how long input ids are remembered. Copies of a record reach the inbox only when
    /// a producer re-sends its uncommitted tail after a failure, and a producer can only re-send
    /// what its own input still retains; so this must be at least the retention of the topics
    /// feeding the inbox (Kafka's default is 7 days). Replays start from the state recorded in
    /// the history topic, which already holds exactly the ids decided before that point.
    public struct Idempotency: Hashable, Sendable {
        public var remember: TimeSpan
    }

    /// P-COOL-1.
    public struct Cooldown: Hashable, Sendable {
        public var dismissals: Int
        public var within: TimeSpan
        public var duration: TimeSpan
        public var maxDeliveries: Int
        public var per: TimeSpan
    }

    /// P-DND-1 defaults; users may set their own.
    public struct QuietHours: Hashable, Sendable {
        public var start: LocalTimeOfDay
        public var end: LocalTimeOfDay
    }

    /// P-BUD-5: where held-back notifications are summarised.
    public struct Digest: Hashable, Sendable {
        public enum Schedule: Hashable, Sendable {
            /// The next local day at `time` (rin: 09:00).
            case nextDay
            /// The next `weekday` (ISO 1 = Monday … 7 = Sunday) at `time` (fitcircle: Sunday 20:00).
            case weekly(weekday: Int)
        }
        public var notification: String
        /// The digest is used once more than this many non-security candidates arrived in a
        /// local day (rin: 5; 0 means always).
        public var whenCandidatesExceed: Int
        public var schedule: Schedule
        public var time: LocalTimeOfDay
    }

    /// P-LAP-1…6.
    public struct Lapse: Hashable, Sendable {
        public enum QuietWeekChoice: String, Hashable, Sendable, CaseIterable {
            case summary
            case topPending = "top_pending"
        }
        public var quietModeDays: Int
        public var valueReminderDays: Int
        public var dormantDays: Int
        public var noActionDays: Int
        /// Categories still pushed in quiet mode (besides `always_deliver` types).
        public var quietModeAllowedCategories: [String]
        public var quietModeMaxNotifications: Int
        public var quietModePeriod: TimeSpan
        public var quietWeekChoice: QuietWeekChoice
        public var summaryNotification: String
        public var valueReminderNotification: String
        /// P-LAP-5: one email at the dormant tier to users who opted in.
        public var dormantEmail: Bool
    }

    /// P-WB-1.
    public struct WelcomeBack: Hashable, Sendable {
        public enum Line: String, Hashable, Sendable, CaseIterable {
            case score, dedup, access, enrichment, birthdays, reminders
            case newContacts = "new_contacts"
        }
        public var afterDays: Int
        public var maxLines: Int
        public var expiresAfter: TimeSpan
        public var title: String
        /// In display order.
        public var lines: [(line: Line, template: CopyTemplate)]
        public var more: CopyTemplate

        public static func == (a: WelcomeBack, b: WelcomeBack) -> Bool {
            a.afterDays == b.afterDays && a.maxLines == b.maxLines && a.expiresAfter == b.expiresAfter
                && a.title == b.title && a.more == b.more
                && a.lines.map(\.line) == b.lines.map(\.line) && a.lines.map(\.template) == b.lines.map(\.template)
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(afterDays); hasher.combine(title)
            for entry in lines { hasher.combine(entry.line); hasher.combine(entry.template) }
        }
    }

    /// P-EVT-1: `user_was_active` means an open within this window.
    public struct Activity: Hashable, Sendable {
        public var activeWindow: TimeSpan
    }

    /// FitCircle PRD Feature 8 "pause non-critical notifications on weekends".
    public struct WeekendPause: Hashable, Sendable {
        /// Whether users have it on unless they say otherwise.
        public var onByDefault: Bool
        /// ISO weekdays that count as the weekend.
        public var days: [Int]
    }

    public struct SectionPolicy: Hashable, Sendable {
        public var expiresAfter: TimeSpan?
    }

    public struct CategoryPolicy: Hashable, Sendable {
        /// P-COAL-1: whether intents of this category are held and merged.
        public var coalesce: Bool
        /// P-COOL-1 exemption.
        public var cooldownExempt: Bool
    }

    /// How intents of one type merge into one notification (P-COAL-1) and which copy variants
    /// that needs.
    public enum MergeRule: String, Hashable, Sendable, CaseIterable {
        /// The earliest intent's data fills `one`.
        case first
        /// The latest intent's data fills `one` (milestones: the last label reached).
        case latest
        /// `data.count` adds up; `one` gets `{count}`.
        case sumCount = "sum_count"
        /// `data.names` concatenate: `one` (`{name}`) or `many` (`{name}`, `{others}`).
        case names
        /// First `old`, last `new`: `first` (`{score}`), `up` / `down` (`{old}`, `{new}`, `{delta}`).
        case scoreChange = "score_change"
        /// Contact reminders of one kind: `one` (`{name}`, `{note}`), `two` (`{name}`,
        /// `{second}`), `many` (`{name}`, `{others}`); optional `one_without_note`.
        case contactReminders = "contact_reminders"

        /// Copy variants this rule reads, and the placeholders each may use (nil: any data field).
        var variants: [String: Set<String>?] {
            switch self {
            case .first, .latest: ["one": nil]
            case .sumCount: ["one": nil]
            case .names: ["one": ["name"], "many": ["name", "others"]]
            case .scoreChange: ["first": ["score", "label"], "up": ["old", "new", "delta", "label"], "down": ["old", "new", "delta", "label"]]
            case .contactReminders: ["one": ["name", "note"], "two": ["name", "second"], "many": ["name", "others"]]
            }
        }

        var optionalVariants: [String: Set<String>] {
            self == .contactReminders ? ["one_without_note": ["name"]] : [:]
        }
    }

    /// Per-type frequency caps (§1 "own cap", FitCircle's frequency caps).
    public struct Caps: Hashable, Sendable {
        public struct PerKey: Hashable, Sendable {
            public enum Period: String, Hashable, Sendable, CaseIterable { case year, ever }
            /// The `data` field naming what is capped (a contact, a label, a challenge).
            public var field: String
            public var max: Int
            public var period: Period
        }
        public var perDay: Int?
        public var perWeek: Int?
        public var minInterval: TimeSpan?
        public var total: Int?
        public var withinDaysOfSignup: Int?
        public var perKey: PerKey?

        public static let none = Caps()
        var needsHistory: Bool { perWeek != nil || minInterval != nil }
    }

    /// One row of the catalog (§1).
    public struct NotificationType: Hashable, Sendable {
        public var name: String
        public var category: String
        /// 0 = most important (P-BUD-2).
        public var rank: Int
        /// SECURITY: immediate, exempt from every rule but idempotency (P-BUD-1).
        public var alwaysDeliver: Bool
        /// Made by the engine itself (digest, lapse tiers); never accepted as an intent.
        public var generated: Bool
        /// Shown in sections only, never pushed (`profile.incomplete`).
        public var inAppOnly: Bool
        /// Only premium users get it (`premium.who_viewed`).
        public var requiresPremium: Bool
        /// False for FitCircle's "required" notifications: category settings and the
        /// weekend pause do not apply.
        public var userCanDisable: Bool
        /// P-DND-1 exception: a `data` field holding the user's own scheduled local time; when
        /// that time lies inside quiet hours the notification is delivered anyway.
        public var quietHoursExemptWhenScheduledIn: String?
        /// When a coalescing window holds both, this type's notification wins (milestone over
        /// updated, P-COAL-1).
        public var supersedes: [String]
        public var caps: Caps
        public var merge: MergeRule
        public var title: CopyTemplate
        public var copy: [String: CopyTemplate]
        public var deepLink: CopyTemplate
        /// Used instead of `deepLink` when one notification stands for several subjects.
        public var deepLinkMerged: CopyTemplate?
        /// P-SEC-2: where the content goes when it is not pushed.
        public var section: String?
        /// The `data` field that tells section items of this type apart (one item per value).
        public var sectionKey: String?
        /// Which "since last open" total (P-WB-2) an intent of this type adds to.
        public var sinceOpen: WelcomeBack.Line?
    }

    public func type(_ name: String) -> NotificationType? { catalog[name] }

    public func category(_ name: String) -> CategoryPolicy {
        categories[name] ?? CategoryPolicy(coalesce: true, cooldownExempt: false)
    }
}
