public import FleetModel

/// The logical topics a replay or export of one worker reads, named in this one place (from
/// `Worker`) so that a change of naming, such as generation-suffixed topics after a partition
/// migration, is made here only.
public struct WorkerTopics: Sendable, Hashable {
    public var worker: Worker

    public init(worker: Worker) { self.worker = worker }

    /// The log the worker folds: what is replayed.
    public var folded: String { worker.foldedTopic }
    /// `<worker>.state`: states and log-time positions.
    public var state: String { worker.stateTopic }
    /// `<worker>.history`: the state changes, with before and after images.
    public var history: String { worker.historyTopic }
    /// Where the fold's dead letters go.
    public var deadLetter: String { Topics.deadLetter(of: worker.foldedTopic) }
    /// The topics the worker's fold writes its outputs to: the delivery worker's four output
    /// topics, or the delivery inbox for the upstream workers.
    public var outputs: [String] {
        switch worker {
        case .delivery: [Topics.deliveries, Topics.decisions, Topics.sections, Topics.retentionEvents]
        case .score, .sync, .reminder, .access: [Topics.deliveryInbox]
        }
    }
}
