public import FleetModel

/// The one-sentence summary of a score's drivers (score spec §5), shown in the "Score Changed"
/// section item (P-SCO-6).
public enum Explainability: String, CaseIterable, Sendable {
    case newUserBuilding = "new_user_building"
    case trustPenalty = "trust_penalty"
    case qualityLow = "quality_low"
    case qualityHighest = "quality_highest"
    case positionHighest = "position_highest"
    case stabilityHighest = "stability_highest"

    /// The score spec's sentence, verbatim.
    public var sentence: String {
        switch self {
        case .newUserBuilding:
            "Your score is building as we learn about your network. Keep adding and verifying contacts."
        case .trustPenalty:
            "Your trust score is lower due to a recent account flag. Maintaining good standing will help."
        case .qualityLow:
            "Many of your contacts don't have you in their phone. Mutual connections boost your score."
        case .qualityHighest:
            "Your score is strong because many of your connections are mutual and verified."
        case .positionHighest:
            "You're well-connected across different groups in your network."
        case .stabilityHighest:
            "Your network is becoming more stable as connections persist over time."
        }
    }

    /// Chooses the sentence for a score, trying the spec's conditions from the most specific:
    ///
    /// 1. score below `buildingBelow` → "New user, building" (POLICY.md P-SCO-6: under 30);
    /// 2. trust below `trustPenaltyBelow` → "Trust penalty active";
    /// 3. quality below `qualityLowBelow` → "Quality low, many one-way";
    /// 4. otherwise the strongest of quality, position and stability (ties go to the heavier
    ///    component: quality 40 %, position 30 %, stability 20 %). Trust has no "strongest"
    ///    sentence in the spec, so it only speaks through the penalty. Once rules 2–3 have not
    ///    applied, "all good" of the quality sentence holds.
    ///
    /// The spec's "Stability improving" needs history the batch does not carry; the stability
    /// sentence is used when stability is the strongest component, which its wording fits.
    public static func choose(score: Int, components: ScoreComputed.Components, settings: ExplainabilitySettings) -> Explainability {
        if score < settings.buildingBelow { return .newUserBuilding }
        if components.trust < settings.trustPenaltyBelow { return .trustPenalty }
        if components.quality < settings.qualityLowBelow { return .qualityLow }
        var best: (value: Int, choice: Explainability) = (components.quality, .qualityHighest)
        if components.position > best.value { best = (components.position, .positionHighest) }
        if components.stability > best.value { best = (components.stability, .stabilityHighest) }
        return best.choice
    }
}
