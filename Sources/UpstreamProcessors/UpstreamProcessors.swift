public import FleetModel

/// The four upstream workers' processors built from one profile's settings, and which of them
/// folds a given topic: what the simulator and the worker executables use to route records.
///
/// Each processor is a `UserProcessor` with its own `State` type; callers keep one state per
/// user per worker and drive it as DESIGN.md "Time" says (records in log order, due timers
/// fired before any later record). Only the reminder worker has timers.
public struct UpstreamProcessors: Sendable {
    public let score: ScoreProcessor
    public let sync: SyncProcessor
    public let reminder: ReminderProcessor
    public let access: AccessProcessor

    public init(settings: UpstreamSettings = .rin) {
        score = ScoreProcessor(settings: settings.score)
        sync = SyncProcessor(settings: settings.sync)
        reminder = ReminderProcessor(settings: settings.reminders)
        access = AccessProcessor(settings: settings.access)
    }

    /// The upstream workers, in the order of DESIGN.md's diagram.
    public static let workers: [Worker] = [.score, .sync, .access, .reminder]

    /// The upstream worker whose processor folds records read from `topic`, or nil when no
    /// upstream worker does (e.g. `rin.app.activity`, which goes to the delivery worker).
    ///
    /// `rin.reminders` maps to the reminder worker too: its ingest stage forwards those records
    /// unchanged into `rin.reminder.inbox`, which the processor folds, so an in-process
    /// simulator may hand them straight to it.
    public static func worker(for topic: String) -> Worker? {
        switch topic {
        case Topics.scoreBatches: .score
        case Topics.syncResults: .sync
        case Topics.accessRequests: .access
        case Topics.reminders, Topics.reminderInbox: .reminder
        default: nil
        }
    }
}
