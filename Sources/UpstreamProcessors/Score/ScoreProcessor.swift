public import FleetModel

/// What the score worker remembers about one user.
public struct ScoreState: Codable, Hashable, Sendable {
    /// The score of the last processed batch (the declining run compares against it).
    public var lastScore: Int?
    /// The score of the last `score.updated` intent: P-SCO-2 measures changes from here.
    public var lastNotifiedScore: Int?
    /// Lower bound of the highest label ever reached (P-SCO-3). Stored as the bound rather than
    /// an index so renaming labels in a profile does not re-fire milestones.
    public var highestLabelFrom: Int?
    /// How many consecutive calculations have each fallen below the previous one (P-SCO-5).
    public var fallingStreak: Int = 0
    /// Whether the current declining run has already been signalled.
    public var decliningRunSignalled: Bool = false
    /// The last processed batch: a batch with this id, or computed no later, is ignored.
    public var lastBatchId: String?
    public var lastComputedAt: Timestamp?

    public init() {}
}

/// The score worker's decisions (POLICY.md P-SCO-1…7, score spec §2 and §5), folding
/// `rin.score.batches`.
///
/// Per score record, in this order (which fixes the output ids):
/// `score.updated` intent (P-SCO-1/2), `score.milestone` intent (P-SCO-3), "Score Changed"
/// section item (P-SCO-4/6), value event `score_updated` (P-SCO-4), churn signal
/// `score_declining` (P-SCO-5). Batches are idempotent: a batch already processed, or one
/// computed no later than the last processed batch, is ignored without output.
public struct ScoreProcessor: UserProcessor {
    public let settings: ScoreSettings
    private var labels: ScoreLabels { ScoreLabels(bands: settings.labels) }

    public init(settings: ScoreSettings = .rin) { self.settings = settings }

    public func initialState(userId: String) -> ScoreState { ScoreState() }

    public func process(_ record: FleetRecord, state: inout ScoreState, context: inout ProcessingContext) throws(RecordError) {
        switch record {
        case .scoreComputed(let score):
            try score.validate()  // P-SCO-7: records built in-process skip the codec's check
            apply(score, to: &state, context: &context)
        case .tick:
            return
        default:
            throw RecordError("score-worker does not process records of type '\(record.type)'")
        }
    }

    public func fireTimers(state: inout ScoreState, context: inout ProcessingContext) {}

    public func nextWakeUp(_ state: ScoreState) -> Timestamp? { nil }
    public static let nextWakeUpDependsOnStateAlone = true

    private func apply(_ score: ScoreComputed, to state: inout ScoreState, context: inout ProcessingContext) {
        if score.batchId == state.lastBatchId { return }
        if let last = state.lastComputedAt, score.computedAt <= last { return }

        let new = score.score
        let band = labels.band(of: new)

        // The score a ≥ threshold change is measured from, when this batch makes one.
        var changedFrom: Int?
        if let old = state.lastNotifiedScore {
            if abs(new - old) >= settings.changeThreshold {  // P-SCO-2
                context.emitIntent(.scoreUpdated, data: ["new": .integer(new), "old": .integer(old), "label": .string(band.name)])
                state.lastNotifiedScore = new
                changedFrom = old
            }
        } else {  // P-SCO-1
            context.emitIntent(.scoreUpdated, data: ["new": .integer(new), "label": .string(band.name)])
            state.lastNotifiedScore = new
        }

        if let highest = state.highestLabelFrom {  // P-SCO-3
            if band.from > highest {
                context.emitIntent(
                    .scoreMilestone,
                    data: ["label": .string(band.name), "threshold": .integer(band.from), "score": .integer(new)])
                state.highestLabelFrom = band.from
            }
        } else {
            state.highestLabelFrom = band.from  // the first score only sets the starting label
        }

        if let old = changedFrom {  // P-SCO-4, P-SCO-6
            emitScoreChangedItem(score, old: old, band: band, context: &context)
        }

        context.emitValueEvent(.scoreUpdated)  // P-SCO-4: every score is a value event

        if let previous = state.lastScore, new < previous {  // P-SCO-5
            state.fallingStreak += 1
        } else {
            state.fallingStreak = 0
            state.decliningRunSignalled = false
        }
        if state.fallingStreak >= settings.decliningRunLength && !state.decliningRunSignalled {
            context.emitChurnSignal(.scoreDeclining)
            state.decliningRunSignalled = true
        }

        state.lastScore = new
        state.lastBatchId = score.batchId
        state.lastComputedAt = score.computedAt
    }

    /// The "Score Changed" item: one per user (`item_id` `score_changed`), so each refresh
    /// replaces the last; it expires `sectionExpiryHours` after the refresh (§5.2 auto-dismiss).
    private func emitScoreChangedItem(_ score: ScoreComputed, old: Int, band: ScoreLabelBand, context: inout ProcessingContext) {
        let explanation = Explainability.choose(score: score.score, components: score.components, settings: settings.explainability)
        let components = score.components
        let item: JSONObject = [
            "score": .integer(score.score),
            "old": .integer(old),
            "delta": .integer(score.score - old),
            "label": .string(band.name),
            "explanation": .string(explanation.sentence),
            "explanation_key": .string(explanation.rawValue),
            "components": [
                "quality": .integer(components.quality), "position": .integer(components.position),
                "stability": .integer(components.stability), "trust": .integer(components.trust),
            ],
            "computed_at": .string(score.computedAt.rfc3339),
        ]
        context.emitSectionItem(
            section: Section.scoreChanged, itemId: Section.scoreChanged, item: item,
            expiresAt: context.now + .hours(Int64(settings.sectionExpiryHours)))
    }
}
