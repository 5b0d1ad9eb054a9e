import FleetModel
import Foundation
import Testing
import UpstreamProcessors

/// The `upstream:` block handed to the owner of the profile files for `rin.yaml` (and, unchanged,
/// `fitcircle.yaml`): it must load to exactly `UpstreamSettings.rin`.
let rinUpstreamBlock = """
    # Upstream workers (POLICY.md §4): score, sync, reminder and access workers.
    upstream:
      score:
        change_threshold: 2          # P-SCO-2: |new - last notified| >= this
        labels:                      # P-SCO-3: label and its lowest score, ascending, first from 0
          - { name: New, from: 0 }
          - { name: Building, from: 30 }
          - { name: Good, from: 60 }
          - { name: Strong, from: 80 }
        declining_run_length: 3      # P-SCO-5: consecutive falling calculations
        section_expiry_hours: 48     # P-SCO-4: "Score Changed" item lifetime
        explainability:              # P-SCO-6: score spec §5 sentence choice
          building_below: 30
          trust_penalty_below: 40
          quality_low_below: 40
      sync:
        dedup_accumulation_count: 10          # P-SYN-5
        dedup_accumulation_min_age_days: 14   # P-SYN-5
        remembered_sync_ids: 64               # re-delivered sync results ignored
      reminders:
        birthday_time: "09:00"                # P-REM-1, local
        upcoming_window_days: 7               # P-REM-3
        max_per_user: 500                     # beyond: dead-lettered
        followup_late_grace_minutes: 60       # a follow-up this late still fires
      access:
        remembered_request_ids: 256           # P-ACC-1 duplicate detection memory
    """

@Suite("Upstream settings (P-PROF-1)")
struct UpstreamSettingsTests {
    @Test("P-PROF-1 the rin upstream block loads to the rin defaults")
    func rinBlock() throws {
        #expect(try UpstreamSettings.load(profileYAML: "name: rin\ndaily_budget: 3\n" + rinUpstreamBlock) == .rin)
    }

    @Test("P-PROF-1 a missing section or missing fields take the defaults; present fields override")
    func defaultsAndOverrides() throws {
        #expect(try UpstreamSettings.load(profileYAML: "name: rin\n") == .rin)
        #expect(try UpstreamSettings.load(profileYAML: "") == .rin)
        let loaded = try UpstreamSettings.load(profileYAML: """
            upstream:
              score:
                change_threshold: 5
              reminders:
                birthday_time: "08:30"
            """)
        var expected = UpstreamSettings.rin
        expected.score.changeThreshold = 5
        expected.reminders.birthdayTime = LocalTimeOfDay(hour: 8, minute: 30)
        #expect(loaded == expected)
    }

    @Test("P-PROF-1 invalid fields are refused with a message naming upstream.<path>")
    func errorsNameTheField() {
        func error(_ yaml: String) -> String? {
            do {
                _ = try UpstreamSettings.load(profileYAML: yaml)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(error("upstream:\n  score:\n    change_threshold: 0\n")
            == "upstream.score.change_threshold: is 0, outside 1–100 (line 3)")
        #expect(error("upstream:\n  score:\n    change_threshold: two\n")
            == "upstream.score.change_threshold: must be a whole number from 1 to 100, got 'two' (line 3)")
        #expect(error("upstream:\n  reminders:\n    birthday_time: \"9am\"\n")
            == "upstream.reminders.birthday_time: must be a local time \"HH:MM\" (00:00–23:59), got '9am' (line 3)")
        #expect(error("upstream:\n  sync:\n    dedup_count: 3\n")
            == "upstream.sync.dedup_count: unknown setting (known: dedup_accumulation_count, dedup_accumulation_min_age_days, remembered_sync_ids) (line 3)")
        #expect(error("upstream:\n  scores: {}\n")
            == "upstream.scores: unknown setting (known: score, sync, reminders, access) (line 2)")
        #expect(error("upstream: 3\n") == "upstream: must be a mapping of settings (line 1)")
        #expect(error("upstream:\n  score:\n    labels:\n      - { name: New, from: 5 }\n")
            == "upstream.score.labels[0].from: is 5, but the first label must start at 0 (line 4)")
        #expect(error("upstream:\n  score:\n    labels:\n      - { name: New, from: 0 }\n      - { name: Good, from: 0 }\n")
            == "upstream.score.labels[1].from: is 0, but labels must be listed with strictly rising 'from' (previous: 0) (line 5)")
        #expect(error("upstream:\n  score:\n    labels: []\n") == "upstream.score.labels: must list at least one label")
        #expect(error("upstream:\n  access:\n    remembered_request_ids: 0\n")
            == "upstream.access.remembered_request_ids: is 0, outside 1–100000 (line 3)")
        #expect(error("upstream: [1\n")?.hasPrefix("policy profile is not valid YAML") == true)
    }

    @Test("P-PROF-1 settings encode with the YAML field names")
    func codableFieldNames() throws {
        let json = String(decoding: try JSONEncoderSorted.encode(UpstreamSettings.rin), as: UTF8.self)
        #expect(json.contains(#""change_threshold":2"#))
        #expect(json.contains(#""birthday_time":"09:00""#))
        #expect(json.contains(#""remembered_request_ids":256"#))
    }
}

enum JSONEncoderSorted {
    static func encode<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try encoder.encode(value)
    }
}
