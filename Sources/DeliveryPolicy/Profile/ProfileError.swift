/// Why a profile cannot be used. The worker prints it and stops at start (P-PROF-1), so it
/// names the field path and the problem: `budget.daily_limit: must be at least 1, got 0`.
public struct ProfileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Dotted path of the offending field (`catalog.score.updated.rank`), or `profile` for the
    /// document as a whole.
    public var field: String
    public var problem: String

    public init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String { "\(field): \(problem)" }
}
