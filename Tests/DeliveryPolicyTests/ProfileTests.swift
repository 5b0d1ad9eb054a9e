import DeliveryPolicy
import Foundation
import Testing

/// P-PROF-1: profiles load, validate every field, and fail with the field path and the problem.
@Suite struct ProfileTests {
    /// The shipped rin profile's source, for tests that load a modified copy.
    static var rinPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/DeliveryPolicy/Profiles/rin.yaml").path
    }

    static func rinText() throws -> String { try String(contentsOfFile: rinPath, encoding: .utf8) }

    /// Loads the rin profile with `original` replaced by `replacement` and returns the error text.
    static func error(replacing original: String, with replacement: String) throws -> String? {
        let text = try rinText()
        #expect(text.contains(original), "fixture drifted: \(original)")
        do {
            _ = try PolicyProfile.load(yaml: text.replacingOccurrences(of: original, with: replacement))
            return nil
        } catch {
            return error.description
        }
    }

    @Test("P-PROF-1 the shipped profiles load")
    func shippedProfilesLoad() throws {
        let rin = try PolicyProfile.shipped("rin")
        #expect(rin.name == "rin")
        #expect(rin.budget.dailyLimit == 3)
        #expect(rin.catalog.count == 15)
        #expect(rin.quietHours.start.description == "22:00")
        let fit = try PolicyProfile.shipped("fitcircle")
        #expect(fit.name == "fitcircle")
        #expect(throws: ProfileError(field: "profile", problem: "no shipped profile 'nope' (shipped: rin, fitcircle)")) {
            try PolicyProfile.shipped("nope")
        }
    }

    @Test("P-PROF-1 the upstream section is accepted and ignored")
    func upstreamSectionIgnored() throws {
        // The shipped file carries the upstream workers' section; the delivery loader leaves
        // whatever is in it to them, even a key it has never heard of.
        let text = try Self.rinText()
        #expect(text.contains("\nupstream:\n"), "fixture drifted: rin.yaml has no upstream section")
        let extended = text.replacingOccurrences(of: "\nupstream:\n", with: "\nupstream:\n  not_a_delivery_field: 1\n")
        #expect(try PolicyProfile.load(yaml: extended).name == "rin")
    }

    @Test("P-PROF-1 validation messages name the field and the problem", arguments: [
        ("daily_limit: 3 ", "daily_limit: 0 ", "budget.daily_limit: must be at least 1, got 0"),
        ("daily_limit: 3 ", "daily_limit: three ", "budget.daily_limit: expected a whole number, got 'three'"),
        ("  daily_limit: 3 ", "  dialy_limit: 3 ", "budget.dialy_limit: unknown field (expected one of: daily_limit, last_slot_excluded_from_rank)"),
        ("  start: \"22:00\"", "  start: \"25:00\"", "quiet_hours.start: expected a time HH:MM (00:00–23:59), got '25:00'"),
        ("dormant_days: 60", "dormant_days: 20", "lapse.dormant_days: must be greater than lapse.value_reminder_days (30), got 20"),
        ("quiet_week_choice: summary", "quiet_week_choice: loudest", "lapse.quiet_week_choice: expected 'summary' or 'top_pending', got 'loudest'"),
        ("    category: PREMIUM\n", "    category: LUXURY\n", "catalog.premium.who_viewed.category: 'LUXURY' is not declared under categories (declared: CONTACTS, DIGEST, PREMIUM, PROFILE, REMINDER, SCORE, SECURITY)"),
        ("Tap to see what improved.", "Tap to see what improved!", "catalog.score.updated.copy.up: copy must not contain exclamation marks (§6.4), got 'Your Rin Score changed: {old} to {new} ({delta}). Tap to see what improved!'"),
        ("      many: \"{name} and {others} {others|other|others} updated", "      lots: \"{name} and {others} {others|other|others} updated", "catalog.contacts.enrichment.copy.many: missing (merge 'names' needs many, one)"),
        ("Your Rin Score is ready: {score}.", "Your Rin Score is ready: {points}.", "catalog.score.updated.copy.first: unknown placeholder '{points}' (merge 'score_change' provides: label, score)"),
        ("\"{count} possible {count|duplicate|duplicates} found.", "\"{count} possible {count|duplicate} found.", "catalog.contacts.dedup_ready.copy.one: placeholder '{count|duplicate}' must be {name} or {name|singular|plural}"),
        ("notification: digest.daily", "notification: score.updated", "digest.notification: catalog entry 'score.updated' must be marked generated: true"),
        ("  schedule: next_day", "  schedule: hourly", "digest.schedule: expected 'next_day' or 'weekly', got 'hourly'"),
        ("    - types: [contacts.dedup_ready]", "    - types: [contacts.dedupe]", "day_one.limits[0].types[0]: 'contacts.dedupe' is not in the catalog"),
        ("    supersedes: [score.updated]", "    supersedes: [contacts.enrichment]", "catalog.score.milestone.supersedes[0]: 'contacts.enrichment' is in category CONTACTS, not SCORE"),
        ("  remember_days: 7", "  remember_days: 0", "idempotency.remember_days: must be at least 1, got 0"),
        ("    section: network_health", "    section: lobby", "catalog.premium.who_viewed.section: not a section (expected one of: circle_suggestions, enrichment_updates, needs_attention, network_health, profile_completion, recently_added, score_changed, upcoming, welcome_back)"),
        ("name: rin\n", "", "name: missing required field"),
    ])
    func validationMessages(original: String, replacement: String, expected: String) throws {
        #expect(try Self.error(replacing: original, with: replacement) == expected)
    }

    @Test("P-PROF-1 broken YAML and emoji are reported")
    func syntaxAndEmoji() throws {
        #expect(throws: ProfileError.self) { try PolicyProfile.load(yaml: "budget: [") }
        #expect(try Self.error(replacing: "\"Your Rin Score is ready: {score}.\"", with: "\"Your Rin Score is ready: {score} 🎉\"")
            == "catalog.score.updated.copy.first: copy must not contain emoji (§6.4), got 'Your Rin Score is ready: {score} 🎉'")
    }
}
