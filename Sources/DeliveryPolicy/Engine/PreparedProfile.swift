/// The profile as the engine reads it on every step, behind one reference.
///
/// Why: `PolicyProfile` is a value with dozens of strings and collections; an `EngineStep`
/// holding its own copy retained and released every one of them on every record. Sharing one
/// immutable instance costs a single retain per step. It also keeps what the engine derives
/// from the profile alone, computed once here instead of per record.
final class PreparedProfile: Sendable {
    let profile: PolicyProfile
    /// The catalog with, for each type, the `data` fields an intent of the type must carry:
    /// one lookup per intent finds both.
    let validation: [String: (type: PolicyProfile.NotificationType, plan: IntentValidation.Plan)]

    init(_ profile: PolicyProfile) {
        self.profile = profile
        self.validation = profile.catalog.mapValues { ($0, IntentValidation.Plan($0)) }
    }
}
