import Foundation
import FleetModel
import Yams

extension PolicyProfile {
    /// Parses and validates a profile. Every problem is reported with the dotted path of the
    /// field (`budget.daily_limit: must be at least 1, got 0`). The top-level `upstream:`
    /// and `sender:` sections belong to the upstream and sender workers and are ignored here.
    public static func load(yaml: String) throws(ProfileError) -> PolicyProfile {
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: yaml) else { throw ProfileError(field: "profile", problem: "the document is empty") }
            root = node
        } catch let error as ProfileError {
            throw error
        } catch {
            throw ProfileError(field: "profile", problem: "not valid YAML: \(error)")
        }
        return try ProfileReader(root: YAMLField(node: root, path: "")).read()
    }

    /// Reads and validates the profile file at `path`.
    public static func load(contentsOf path: String) throws(ProfileError) -> PolicyProfile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ProfileError(field: "profile", problem: "cannot read '\(path)': \(error.localizedDescription)")
        }
        return try load(yaml: text)
    }

    /// The names of the profiles shipped with the engine.
    public static let shippedNames = ["rin", "fitcircle"]

    /// A profile shipped with the engine: `rin` (POLICY.md) or `fitcircle` (P-PROF-1).
    public static func shipped(_ name: String) throws(ProfileError) -> PolicyProfile {
        guard shippedNames.contains(name),
              let url = Bundle.module.url(forResource: name, withExtension: "yaml", subdirectory: "Profiles")
        else {
            throw ProfileError(field: "profile", problem: "no shipped profile '\(name)' (shipped: \(shippedNames.joined(separator: ", ")))")
        }
        return try load(contentsOf: url.path)
    }
}

/// Walks a profile document and builds a validated `PolicyProfile`.
private struct ProfileReader {
    let root: YAMLField

    func read() throws(ProfileError) -> PolicyProfile {
        let top = try root.object(
            allowed: [
                "name", "budget", "day_one", "coalescing", "duplicate_content", "idempotency", "cooldown",
                "quiet_hours", "digest", "lapse", "welcome_back", "activity", "weekend_pause", "sections",
                "categories", "catalog",
            ],
            ignoring: ["upstream", "sender"])
        let categories = try readCategories(try top.required("categories"))
        let sections = try readSections(top.optional("sections"))
        let catalog = try readCatalog(try top.required("catalog"), categories: categories)
        var profile = PolicyProfile(
            name: try top.required("name").nonEmptyString(),
            budget: try readBudget(try top.required("budget")),
            dayOne: try readDayOne(top.optional("day_one"), catalog: catalog),
            coalescing: .init(window: .seconds(Int64(try seconds(top, "coalescing", "window_seconds", atLeast: 0)))),
            duplicateContent: .init(window: .minutes(Int64(try seconds(top, "duplicate_content", "window_minutes", atLeast: 0)))),
            idempotency: .init(remember: .days(Int64(try seconds(top, "idempotency", "remember_days", atLeast: 1)))),
            cooldown: try readCooldown(try top.required("cooldown")),
            quietHours: try readQuietHours(try top.required("quiet_hours")),
            digest: try readDigest(try top.required("digest"), catalog: catalog),
            lapse: try readLapse(try top.required("lapse"), catalog: catalog, categories: categories),
            welcomeBack: try readWelcomeBack(try top.required("welcome_back")),
            activity: .init(activeWindow: .minutes(Int64(try seconds(top, "activity", "active_window_minutes", atLeast: 1)))),
            weekendPause: try readWeekendPause(top.optional("weekend_pause")),
            sections: sections,
            categories: categories,
            catalog: catalog)
        profile.historyHorizon = profile.computeHistoryHorizon()
        return profile
    }

    /// Reads `section.key` from a one-field mapping such as `coalescing: {window_seconds: 30}`.
    private func seconds(_ top: YAMLObject, _ section: String, _ key: String, atLeast minimum: Int) throws(ProfileError) -> Int {
        let object = try top.required(section).object(allowed: [key])
        return try object.required(key).int(atLeast: minimum)
    }

    private func readBudget(_ field: YAMLField) throws(ProfileError) -> PolicyProfile.Budget {
        let o = try field.object(allowed: ["daily_limit", "last_slot_excluded_from_rank"])
        return .init(
            dailyLimit: try o.required("daily_limit").int(atLeast: 1),
            lastSlotExcludedFromRank: try o.optional("last_slot_excluded_from_rank")?.int(atLeast: 1))
    }

    private func readDayOne(_ field: YAMLField?, catalog: [String: PolicyProfile.NotificationType]) throws(ProfileError) -> PolicyProfile.DayOne {
        guard let field else { return .init(limits: []) }
        let o = try field.object(allowed: ["limits"])
        var limits: [PolicyProfile.DayOne.Limit] = []
        for item in try o.required("limits").list() {
            let l = try item.object(allowed: ["types", "max"])
            let typesField = try l.required("types")
            let types = try typesField.strings()
            if types.isEmpty { throw typesField.fail("must name at least one notification type") }
            for (i, t) in types.enumerated() where catalog[t] == nil {
                throw ProfileError(field: "\(typesField.path)[\(i)]", problem: "'\(t)' is not in the catalog")
            }
            limits.append(.init(types: types, max: try l.required("max").int(atLeast: 0)))
        }
        return .init(limits: limits)
    }

    private func readCooldown(_ field: YAMLField) throws(ProfileError) -> PolicyProfile.Cooldown {
        let o = try field.object(allowed: ["dismissals", "within_hours", "duration_days", "max_deliveries", "per_hours"])
        return .init(
            dismissals: try o.required("dismissals").int(atLeast: 1),
            within: .hours(Int64(try o.required("within_hours").int(atLeast: 1))),
            duration: .days(Int64(try o.required("duration_days").int(atLeast: 1))),
            maxDeliveries: try o.required("max_deliveries").int(atLeast: 0),
            per: .hours(Int64(try o.required("per_hours").int(atLeast: 1))))
    }

    private func readQuietHours(_ field: YAMLField) throws(ProfileError) -> PolicyProfile.QuietHours {
        let o = try field.object(allowed: ["start", "end"])
        return .init(start: try o.required("start").timeOfDay(), end: try o.required("end").timeOfDay())
    }

    private func readDigest(_ field: YAMLField, catalog: [String: PolicyProfile.NotificationType]) throws(ProfileError) -> PolicyProfile.Digest {
        let o = try field.object(allowed: ["notification", "when_candidates_exceed", "schedule", "weekday", "time"])
        let notification = try generatedType(o, "notification", catalog: catalog, variants: ["one": ["count"]])
        let scheduleField = try o.required("schedule")
        let schedule: PolicyProfile.Digest.Schedule
        switch try scheduleField.string() {
        case "next_day":
            if let weekday = o.optional("weekday") { throw weekday.fail("only allowed with schedule 'weekly'") }
            schedule = .nextDay
        case "weekly":
            schedule = .weekly(weekday: try o.required("weekday").int(atLeast: 1, atMost: 7))
        case let other:
            throw scheduleField.fail("expected 'next_day' or 'weekly', got '\(other)'")
        }
        return .init(
            notification: notification,
            whenCandidatesExceed: try o.required("when_candidates_exceed").int(atLeast: 0),
            schedule: schedule,
            time: try o.required("time").timeOfDay())
    }

    /// A `generated: true` catalog type named by `key`, whose copy uses only `variants`.
    private func generatedType(
        _ o: YAMLObject, _ key: String, catalog: [String: PolicyProfile.NotificationType], variants: [String: Set<String>]
    ) throws(ProfileError) -> String {
        let field = try o.required(key)
        let name = try field.nonEmptyString()
        guard let type = catalog[name] else { throw field.fail("'\(name)' is not in the catalog") }
        guard type.generated else { throw field.fail("catalog entry '\(name)' must be marked generated: true") }
        for (variant, allowed) in variants.sorted(by: { $0.key < $1.key }) {
            guard let template = type.copy[variant] else {
                throw ProfileError(field: "catalog.\(name).copy.\(variant)", problem: "missing (needed as \(o.fieldPath(key)))")
            }
            if let bad = template.placeholders.subtracting(allowed).sorted().first {
                throw ProfileError(field: "catalog.\(name).copy.\(variant)", problem: "unknown placeholder '{\(bad)}' (allowed: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
        if !type.deepLink.placeholders.isEmpty {
            throw ProfileError(field: "catalog.\(name).deep_link", problem: "a generated notification's deep link cannot have placeholders")
        }
        return name
    }

    private func readLapse(
        _ field: YAMLField, catalog: [String: PolicyProfile.NotificationType], categories: [String: PolicyProfile.CategoryPolicy]
    ) throws(ProfileError) -> PolicyProfile.Lapse {
        let o = try field.object(allowed: [
            "quiet_mode_days", "value_reminder_days", "dormant_days", "no_action_days", "quiet_mode_allowed_categories",
            "quiet_mode_max_notifications", "quiet_mode_period_days", "quiet_week_choice", "summary_notification",
            "value_reminder_notification", "dormant_email",
        ])
        let quiet = try o.required("quiet_mode_days").int(atLeast: 1)
        let valueField = try o.required("value_reminder_days")
        let value = try valueField.int(atLeast: 1)
        if value <= quiet { throw valueField.fail("must be greater than lapse.quiet_mode_days (\(quiet)), got \(value)") }
        let dormantField = try o.required("dormant_days")
        let dormant = try dormantField.int(atLeast: 1)
        if dormant <= value { throw dormantField.fail("must be greater than lapse.value_reminder_days (\(value)), got \(dormant)") }
        let allowedField = try o.required("quiet_mode_allowed_categories")
        let allowed = try allowedField.strings()
        for (i, c) in allowed.enumerated() where categories[c] == nil {
            throw ProfileError(field: "\(allowedField.path)[\(i)]", problem: "'\(c)' is not a declared category")
        }
        let choiceField = try o.required("quiet_week_choice")
        let choiceText = try choiceField.string()
        guard let choice = PolicyProfile.Lapse.QuietWeekChoice(rawValue: choiceText) else {
            throw choiceField.fail("expected 'summary' or 'top_pending', got '\(choiceText)'")
        }
        return .init(
            quietModeDays: quiet,
            valueReminderDays: value,
            dormantDays: dormant,
            noActionDays: try o.required("no_action_days").int(atLeast: 1),
            quietModeAllowedCategories: allowed,
            quietModeMaxNotifications: try o.required("quiet_mode_max_notifications").int(atLeast: 0),
            quietModePeriod: .days(Int64(try o.required("quiet_mode_period_days").int(atLeast: 1))),
            quietWeekChoice: choice,
            summaryNotification: try generatedType(
                o, "summary_notification", catalog: catalog,
                variants: ["one": ["enrichments", "dedups", "score"], "without_score": ["enrichments", "dedups"]]),
            valueReminderNotification: try generatedType(o, "value_reminder_notification", catalog: catalog, variants: ["one": ["enrichments"]]),
            dormantEmail: try o.required("dormant_email").bool())
    }

    private func readWelcomeBack(_ field: YAMLField) throws(ProfileError) -> PolicyProfile.WelcomeBack {
        let o = try field.object(allowed: ["after_days", "max_lines", "expires_after_hours", "title", "lines", "more"])
        var lines: [(line: PolicyProfile.WelcomeBack.Line, template: CopyTemplate)] = []
        for (key, value) in try o.required("lines").mapping() {
            guard let line = PolicyProfile.WelcomeBack.Line(rawValue: key) else {
                throw value.fail("unknown line (expected one of: \(PolicyProfile.WelcomeBack.Line.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            let template = try value.copy()
            let allowed: Set<String> = line == .score ? ["old", "new", "delta"] : ["count"]
            if let bad = template.placeholders.subtracting(allowed).sorted().first {
                throw value.fail("unknown placeholder '{\(bad)}' (allowed: \(allowed.sorted().joined(separator: ", ")))")
            }
            lines.append((line, template))
        }
        let moreField = try o.required("more")
        let more = try moreField.copy()
        if let bad = more.placeholders.subtracting(["count"]).first { throw moreField.fail("unknown placeholder '{\(bad)}' (allowed: count)") }
        return .init(
            afterDays: try o.required("after_days").int(atLeast: 1),
            maxLines: try o.required("max_lines").int(atLeast: 1),
            expiresAfter: .hours(Int64(try o.required("expires_after_hours").int(atLeast: 1))),
            title: try o.required("title").copy().source,
            lines: lines,
            more: more)
    }

    private func readWeekendPause(_ field: YAMLField?) throws(ProfileError) -> PolicyProfile.WeekendPause {
        guard let field else { return .init(onByDefault: false, days: []) }
        let o = try field.object(allowed: ["on_by_default", "days"])
        var days: [Int] = []
        for item in try o.required("days").list() { days.append(try item.int(atLeast: 1, atMost: 7)) }
        return .init(onByDefault: try o.required("on_by_default").bool(), days: days)
    }

    private func readSections(_ field: YAMLField?) throws(ProfileError) -> [String: PolicyProfile.SectionPolicy] {
        guard let field else { return [:] }
        var out: [String: PolicyProfile.SectionPolicy] = [:]
        for (name, value) in try field.mapping() {
            guard SectionItem.sections.contains(name) else {
                throw value.fail("not a section (expected one of: \(SectionItem.sections.sorted().joined(separator: ", ")))")
            }
            let o = try value.object(allowed: ["expires_after_hours"])
            out[name] = .init(expiresAfter: try o.optional("expires_after_hours").map { f throws(ProfileError) in .hours(Int64(try f.int(atLeast: 1))) })
        }
        return out
    }

    private func readCategories(_ field: YAMLField) throws(ProfileError) -> [String: PolicyProfile.CategoryPolicy] {
        var out: [String: PolicyProfile.CategoryPolicy] = [:]
        for (name, value) in try field.mapping() {
            let o = try value.object(allowed: ["coalesce", "cooldown_exempt"])
            out[name] = .init(
                coalesce: try o.optional("coalesce")?.bool() ?? true,
                cooldownExempt: try o.optional("cooldown_exempt")?.bool() ?? false)
        }
        if out.isEmpty { throw field.fail("must declare at least one category") }
        return out
    }

    private func readCatalog(_ field: YAMLField, categories: [String: PolicyProfile.CategoryPolicy]) throws(ProfileError) -> [String: PolicyProfile.NotificationType] {
        var out: [String: PolicyProfile.NotificationType] = [:]
        for (name, value) in try field.mapping() {
            out[name] = try readType(name, value, categories: categories)
        }
        if out.isEmpty { throw field.fail("must list at least one notification type") }
        for (name, type) in out.sorted(by: { $0.key < $1.key }) {
            for (i, other) in type.supersedes.enumerated() {
                let path = "catalog.\(name).supersedes[\(i)]"
                guard let target = out[other] else { throw ProfileError(field: path, problem: "'\(other)' is not in the catalog") }
                if target.category != type.category {
                    throw ProfileError(field: path, problem: "'\(other)' is in category \(target.category), not \(type.category)")
                }
            }
        }
        return out
    }

    private func readType(_ name: String, _ field: YAMLField, categories: [String: PolicyProfile.CategoryPolicy]) throws(ProfileError) -> PolicyProfile.NotificationType {
        let o = try field.object(allowed: [
            "category", "rank", "always_deliver", "generated", "in_app_only", "requires_premium", "user_can_disable",
            "quiet_hours_exempt_when_scheduled_in", "supersedes", "caps", "merge", "title", "copy", "deep_link",
            "deep_link_merged", "section", "section_key", "since_open",
        ])
        let categoryField = try o.required("category")
        let category = try categoryField.nonEmptyString()
        if categories[category] == nil {
            throw categoryField.fail("'\(category)' is not declared under categories (declared: \(categories.keys.sorted().joined(separator: ", ")))")
        }
        let mergeField = o.optional("merge")
        let mergeText = try mergeField?.string() ?? "first"
        guard let merge = PolicyProfile.MergeRule(rawValue: mergeText) else {
            throw (mergeField ?? field).fail("expected one of \(PolicyProfile.MergeRule.allCases.map(\.rawValue).joined(separator: ", ")), got '\(mergeText)'")
        }
        let copyField = try o.required("copy")
        var copy: [String: CopyTemplate] = [:]
        for (variant, value) in try copyField.mapping() { copy[variant] = try value.copy() }
        for (variant, allowed) in merge.variants.sorted(by: { $0.key < $1.key }) {
            guard let template = copy[variant] else {
                throw ProfileError(field: "\(copyField.path).\(variant)", problem: "missing (merge '\(merge.rawValue)' needs \(merge.variants.keys.sorted().joined(separator: ", ")))")
            }
            if let allowed, let bad = template.placeholders.subtracting(allowed).sorted().first {
                throw ProfileError(field: "\(copyField.path).\(variant)", problem: "unknown placeholder '{\(bad)}' (merge '\(merge.rawValue)' provides: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
        for (variant, allowed) in merge.optionalVariants {
            if let template = copy[variant], let bad = template.placeholders.subtracting(allowed).sorted().first {
                throw ProfileError(field: "\(copyField.path).\(variant)", problem: "unknown placeholder '{\(bad)}'")
            }
        }
        var section: String?
        if let sectionField = o.optional("section") {
            let value = try sectionField.string()
            guard SectionItem.sections.contains(value) else {
                throw sectionField.fail("not a section (expected one of: \(SectionItem.sections.sorted().joined(separator: ", ")))")
            }
            section = value
        }
        let inAppOnly = try o.optional("in_app_only")?.bool() ?? false
        if inAppOnly && section == nil { throw ProfileError(field: o.fieldPath("section"), problem: "required for an in_app_only notification") }
        return .init(
            name: name,
            category: category,
            rank: try o.required("rank").int(atLeast: 0),
            alwaysDeliver: try o.optional("always_deliver")?.bool() ?? false,
            generated: try o.optional("generated")?.bool() ?? false,
            inAppOnly: inAppOnly,
            requiresPremium: try o.optional("requires_premium")?.bool() ?? false,
            userCanDisable: try o.optional("user_can_disable")?.bool() ?? true,
            quietHoursExemptWhenScheduledIn: try o.optional("quiet_hours_exempt_when_scheduled_in")?.nonEmptyString(),
            supersedes: try o.optional("supersedes")?.strings() ?? [],
            caps: try readCaps(o.optional("caps")),
            merge: merge,
            title: try o.required("title").copy(),
            copy: copy,
            deepLink: try o.required("deep_link").template(),
            deepLinkMerged: try o.optional("deep_link_merged")?.template(),
            section: section,
            sectionKey: try o.optional("section_key")?.nonEmptyString(),
            sinceOpen: try sinceOpenLine(o.optional("since_open")))
    }

    private func sinceOpenLine(_ field: YAMLField?) throws(ProfileError) -> PolicyProfile.WelcomeBack.Line? {
        guard let field else { return nil }
        let text = try field.string()
        guard let line = PolicyProfile.WelcomeBack.Line(rawValue: text), line != .newContacts else {
            throw field.fail("expected one of: score, dedup, access, enrichment, birthdays, reminders; got '\(text)'")
        }
        return line
    }

    private func readCaps(_ field: YAMLField?) throws(ProfileError) -> PolicyProfile.Caps {
        guard let field else { return .none }
        let o = try field.object(allowed: ["per_day", "per_week", "min_interval_minutes", "total", "within_days_of_signup", "per_key"])
        var caps = PolicyProfile.Caps()
        caps.perDay = try o.optional("per_day")?.int(atLeast: 0)
        caps.perWeek = try o.optional("per_week")?.int(atLeast: 0)
        caps.minInterval = try o.optional("min_interval_minutes").map { f throws(ProfileError) in .minutes(Int64(try f.int(atLeast: 1))) }
        caps.total = try o.optional("total")?.int(atLeast: 0)
        caps.withinDaysOfSignup = try o.optional("within_days_of_signup")?.int(atLeast: 1)
        if let keyField = o.optional("per_key") {
            let k = try keyField.object(allowed: ["field", "max", "period"])
            let periodField = try k.required("period")
            let periodText = try periodField.string()
            guard let period = PolicyProfile.Caps.PerKey.Period(rawValue: periodText) else {
                throw periodField.fail("expected 'year' or 'ever', got '\(periodText)'")
            }
            caps.perKey = .init(field: try k.required("field").nonEmptyString(), max: try k.required("max").int(atLeast: 1), period: period)
        }
        return caps
    }
}
