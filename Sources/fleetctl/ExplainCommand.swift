import ArgumentParser
import FleetModel
import FleetOperations
import FleetSimulation
import Foundation

/// `fleetctl explain`: why a user got, or did not get, a notification. Parses options, calls
/// `Explainer.explain` and prints; all the work is in FleetOperations.
struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show why a user got (or did not get) a notification: the user's timeline of inputs, decisions, deliveries and state.",
        discussion: """
            Reads the user's partition (murmur2 of the user id, as the producers place it) of \
            rin.delivery.inbox, delivery-worker.history, rin.notify.decisions, rin.notify.deliveries, \
            rin.home.sections and rin.retention.events, each to its end as of the call, without \
            joining a consumer group and without writing anything. After a partition migration \
            (fleetctl partitions migrate) every generation of the log and history that exists is read \
            (rin.delivery.inbox.g2, delivery-worker.history.g2, ...; the user's partition of each, per \
            its own partition count); a step's position names its generation (inbox.g2[p]@offset), and \
            a record carried over into a newer generation shows once, where it was folded.

            TIMELINE: one block per step of the delivery worker that concerned the user, in log \
            order: the step's log time, its inbox position (inbox[partition]@offset), the record \
            (an intent with its upstream source, an app activity record, or a tick or another \
            user's record that moved log time so this user's timers fired), then what the step \
            did for the user: decisions (outcome: reason (P- rule)) on intents and on the \
            notifications the worker makes itself (digest, lapsed_summary, top_pending, \
            value_reminder, dormant_email, with their id), deliveries with their copy, \
            section items, retention events, and the state lines that changed (daily budget, \
            quiet hours, quiet mode, cool-downs, pending notifications and their timers).

            INTENTS: per intent, its chain: where it came from, when it arrived, every decision \
            on it in order (a deferral first, then the final one), then the decisions on the \
            digest it went into (a digested intent ends where its digest did), which record fired \
            the timer, what was delivered, and the state line the deciding rule read (e.g. "budget 3/3 used" \
            for P-BUD-1, the quiet hours for P-DND-1). Read the rule in POLICY.md first.

            SENDS: under a decision that delivered, what the sender did with the delivery, from the \
            user's partition of rin.sender.attempts, rin.sender.inbox (send.result) and \
            rin.notify.receipts: each attempt (provider, device id, attempt number, the provider's \
            answer: outcome, status, reason, its id) and the receipt of each channel (sent, failed, \
            token_invalid, fell_back, skipped, expired), or why there is no receipt yet (not taken: \
            the sender is not running or behind; waiting for an answer; still retrying). A fleet \
            without those topics runs no sender: the header says so and explain works as before.

            --since and --until bound the steps shown by log time: an RFC 3339 time \
            (2026-11-21T09:00:00Z) or a span back from now (90m, 24h, 7d; -5h means 5h). Chains of intents \
            shown keep their decisions from outside the range. With --since the log and the outputs are \
            read from two days before it (offsets-for-times, or a scan of timestamps where the brokers do \
            not answer them: said once), so chains reaching further back show no arrival; the history is \
            read whole. Everything is streamed: memory grows with the user's records, not the topic's. Only what the topics still retain \
            can be shown (history: 14 days). The history holds one image per changed user per commit unit: \
            where a unit changed the user more than once, the states between are re-folded from the \
            nearest images (the partition's history and changelog are read, and its log from that unit on).

            --json prints one JSON document (one line, sorted keys) instead: {"user", \
            "partition", "partitions", "logs" [{generation, topic, partition, partitions}], "profile", "since", "until", "steps", "intents"}; a step \
            has "at", "inbox" {topic, partition, offset}, "fired_timers", "input" {"kind": \
            record|tick|other_user|missing, ...}, "outputs" [{"at", "topic", "record"}] and \
            "state_changes" [{"key", "before", "after"}]; an intent has "intent_id", "intent", \
            "arrival", "arrived_at", "final_outcome" and "links" [{"at", "step", \
            "fired_by_timer", "decision", "delivery", "state", "sends"}] (a digest's decision has "kind" and \
            no "intent_id"; "sends" is {"progress", "attempts", "receipts"} for a link with a delivery); \
            "sender_missing_topics" names the sender topics the fleet lacks. Records are in their wire format.

            A user with nothing retained prints "no records for user U in this range" and exits \
            0; a missing topic or an unreachable broker exits 1 with the reason.

            Examples:
              fleetctl explain --user maya --since 24h
              fleetctl explain --user maya \\
                  --since 2026-11-21T00:00:00Z --until 2026-11-22T00:00:00Z
              fleetctl explain --user maya --json > maya.json
            """)

    @OptionGroup var connection: TopicsCommand.Connection

    @Option(help: "The user id (the record key).") var user: String

    // `.unconditional`: `--since -5h` is a value, not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Show steps at or after this log time: RFC 3339, or a span back from now (90m, 24h, 7d; -5h is 5h).", valueName: "time"))
    var since: String?

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Show steps before this log time: RFC 3339, or a span back from now (90m, 24h, 7d).", valueName: "time"))
    var until: String?

    @Option(help: ArgumentHelp(
        "The delivery worker's policy profile, for the budget and default quiet hours in state lines: rin, fitcircle or a profile YAML file.",
        valueName: "rin|fitcircle|file"))
    var profile = "rin"

    @Flag(help: "Print one JSON document for tools instead of the text report.") var json = false

    @Option(help: "Give up reading after this many seconds.") var timeout: Int = 300

    /// The window the options give, at `now`; throws a usage error for an unreadable or
    /// inverted one.
    func window(now: Timestamp) throws -> TimeWindow {
        func bound(_ text: String?, _ name: String) throws -> Timestamp? {
            guard let text else { return nil }
            do { return try TimeWindow.bound(text, now: now) } catch { throw ValidationError("\(name) \(error)") }
        }
        let window = TimeWindow(since: try bound(since, "--since"), until: try bound(until, "--until"))
        if let inverted = TimeBound.inverted(since: window.since, until: window.until) { throw ValidationError(inverted) }
        return window
    }

    func validate() throws {
        if user.isEmpty { throw ValidationError("--user is empty") }
        if timeout <= 0 { throw ValidationError("--timeout is a number of seconds, 1 or more") }
        _ = try window(now: .wallClock)
    }

    func run() async throws {
        let window = try window(now: .wallClock)
        let policy: FleetProfile
        do {
            policy = try FleetProfile(ProfileChoice.resolve(profile))
        } catch {
            throw ValidationError("--profile: \(error)")
        }
        let reader = try await connection.reader(timeout: timeout)
        let timeline = try await Explainer.explain(user: user, window: window, profile: policy.delivery, reader: reader)
        print(json ? TimelineRendering.json(timeline) : TimelineRendering.text(timeline), terminator: "")
    }
}
