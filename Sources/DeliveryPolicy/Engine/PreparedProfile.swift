/// The profile as the engine reads it on every step, behind one reference.
///
/// Why: `PolicyProfile` is a value with dozens of strings and collections; an `EngineStep`
/// holding its own copy retained and released every one of them on every record. Sharing one
/// immutable instance costs a single retain per step. It also keeps what the engine derives
/// from the profile alone, computed once here instead of per record.
final class PreparedProfile: Sendable {
    let profile: PolicyProfile
    /// The catalog by type name, each entry behind a reference (see `CatalogEntry`).
    let catalog: CatalogIndex

    init(_ profile: PolicyProfile) {
        self.profile = profile
        self.catalog = CatalogIndex(profile.catalog.mapValues { CatalogEntry($0, category: profile.category($0.category)) })
    }
}

/// One catalog type with what the engine derives from it.
///
/// Why a class: `NotificationType` holds some fifteen strings and collections, and reading it
/// out of `profile.catalog` copies it (a retain and a release per field). The engine looks types
/// up several times per intent (rank, primary type, cool-down, top pending, section items), so
/// a lookup that hands out one reference, reading only the fields it needs, is much cheaper.
final class CatalogEntry: Sendable {
    let type: PolicyProfile.NotificationType
    /// The `data` fields an intent of the type must carry: one lookup per intent finds both.
    let plan: IntentValidation.Plan
    /// `profile.category(type.category)`, looked up once: every arriving intent asks whether
    /// its category coalesces, and that was a `String`-keyed lookup per intent.
    let category: PolicyProfile.CategoryPolicy

    init(_ type: PolicyProfile.NotificationType, category: PolicyProfile.CategoryPolicy) {
        self.type = type
        self.plan = IntentValidation.Plan(type)
        self.category = category
    }
}

/// `PreparedProfile.catalog` lookups that remember the last type found.
///
/// Why: the intents of a coalescing window nearly always share one type, and the loops over
/// them looked the same name up once per intent; comparing a name with the last one is much
/// cheaper than hashing it.
struct CatalogLookup {
    let catalog: CatalogIndex
    private var last: CatalogEntry?

    init(_ prepared: PreparedProfile) { catalog = prepared.catalog }

    mutating func callAsFunction(_ name: String) -> CatalogEntry? {
        if let last, last.type.name == name { return last }
        let entry = catalog[name]
        if entry != nil { last = entry }
        return entry
    }
}
