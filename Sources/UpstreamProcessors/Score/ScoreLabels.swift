/// Maps scores to the quality labels of a profile (P-SCO-3).
struct ScoreLabels {
    /// Ascending by `from`, the first at 0 (validated when settings load).
    let bands: [ScoreLabelBand]

    /// The index of the label a score earns: the last band whose lower bound it reaches.
    /// Higher index = higher label, which is what milestones compare.
    func rank(of score: Int) -> Int {
        var rank = 0
        for (index, band) in bands.enumerated() where score >= band.from { rank = index }
        return rank
    }

    func band(of score: Int) -> ScoreLabelBand { bands[rank(of: score)] }
}
