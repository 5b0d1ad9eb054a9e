import FleetModel

/// Checks an intent against the profile's catalog before it touches any state (P-CAT-1):
/// unknown or engine-only types, a category that disagrees with the catalog, and `data` that
/// lacks what the type's copy and deep link need are rejected with an operator-readable error
/// and dead-lettered by the runtime. Nothing is guessed.
enum IntentValidation {
    /// The `data` fields a type's copy and links need, derived from the catalog once per
    /// profile (`PreparedProfile`) rather than per intent: deriving them builds several sets
    /// and arrays, which cost more than the checks themselves.
    struct Plan: Sendable {
        /// `first` / `latest`: the placeholders of the `one` copy, sorted.
        var copyFields: [String]
        /// Placeholders of the deep links and title the merge rule does not compute, sorted.
        var linkFields: [String]

        init(_ type: PolicyProfile.NotificationType) {
            var computed: Set<String> = []
            copyFields = []
            switch type.merge {
            case .first, .latest: copyFields = type.copy["one"]?.placeholders.sorted() ?? []
            case .sumCount: computed = ["count"]
            case .names: computed = ["name", "others"]
            case .scoreChange: computed = ["new", "old", "delta", "score"]
            case .contactReminders: computed = ["name", "note", "second", "others"]
            }
            let links = [type.deepLink, type.deepLinkMerged, type.title].compactMap { $0 }
            linkFields = Set(links.flatMap(\.placeholders)).subtracting(computed).sorted()
        }
    }

    /// Returns the type's catalog entry (a reference: handing out the `NotificationType` value
    /// copied all its fields once per intent).
    static func validate(_ intent: Intent, profile prepared: PreparedProfile) throws(RecordError) -> CatalogEntry {
        guard let entry = prepared.catalog[intent.notification] else {
            throw RecordError("unknown notification type \(RecordError.quote(intent.notification)) (P-CAT-1: not in the '\(prepared.profile.name)' catalog)")
        }
        if entry.type.generated {
            throw RecordError("notification type \(RecordError.quote(intent.notification)) is made by the delivery worker itself and cannot be requested")
        }
        if intent.category != entry.type.category {
            throw RecordError("field 'category' is \(RecordError.quote(intent.category)), but '\(intent.notification)' is in category '\(entry.type.category)'")
        }
        let data = intent.data
        func scalar(_ field: String) throws(RecordError) {
            switch data[field] {
            case .string(let s)?: if s.isEmpty { throw RecordError("field 'data.\(field)' must not be empty") }
            case .int?, .double?, .bool?: break
            default: throw RecordError("missing required field 'data.\(field)' (\(intent.notification) needs it)")
            }
        }
        func integer(_ field: String, required: Bool) throws(RecordError) {
            guard let value = data[field] else {
                if required { throw RecordError("missing required field 'data.\(field)' (\(intent.notification) needs it)") }
                return
            }
            guard let n = value.intValue, n >= 0 else { throw RecordError("field 'data.\(field)' must be a whole number of 0 or more") }
        }
        func strings(_ field: String, required: Bool) throws(RecordError) {
            guard let value = data[field] else {
                if required { throw RecordError("missing required field 'data.\(field)' (\(intent.notification) needs it)") }
                return
            }
            guard let array = value.arrayValue, array.allSatisfy({ $0.stringValue?.isEmpty == false }) else {
                throw RecordError("field 'data.\(field)' must be a list of non-empty strings")
            }
            if required && array.isEmpty { throw RecordError("field 'data.\(field)' must not be empty") }
        }

        switch entry.type.merge {
        case .first, .latest:
            for field in entry.plan.copyFields { try scalar(field) }
        case .sumCount:
            try integer("count", required: true)
            try strings("contact_ids", required: false)
        case .names:
            try strings("names", required: true)
            try strings("contact_ids", required: false)
        case .scoreChange:
            try integer("new", required: true)
            try integer("old", required: false)
        case .contactReminders:
            try scalar("contact_name")
        }
        for field in entry.plan.linkFields {
            if field == "contact_id", data["contact_id"] == nil {
                guard let ids = data["contact_ids"]?.arrayValue, !ids.isEmpty else {
                    throw RecordError("missing required field 'data.contact_ids' (\(intent.notification)'s deep link needs a contact)")
                }
                continue
            }
            try scalar(field)
        }
        if let key = entry.type.caps.perKey?.field { try scalar(key) }
        return entry
    }
}
