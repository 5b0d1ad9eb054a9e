import Foundation

/// Any record of the fleet's topics, tagged by its `type`.
public enum FleetRecord: Hashable, Sendable {
    case scoreComputed(ScoreComputed)
    case contactsSyncCompleted(ContactsSyncCompleted)
    case reminderUpserted(ReminderUpserted)
    case reminderCancelled(ReminderCancelled)
    case accessRequested(AccessRequested)
    case securityNewSignin(SecurityAlert)
    case securitySuspiciousActivity(SecurityAlert)
    case userSignedUp(UserSignedUp)
    case appOpened(AppOpened)
    case notificationOpened(NotificationInteraction)
    case notificationDismissed(NotificationInteraction)
    case settingsChanged(SettingsChanged)
    case permissionChanged(PermissionChanged)
    case userAction(UserAction)
    case scoreViewed(ScoreViewed)
    case intent(Intent)
    case sectionItem(SectionItem)
    case retentionEvent(RetentionEvent)
    case tick(Tick)
    case delivery(Delivery)
    case decision(Decision)
    /// The sender's records (`SenderRecord`): devices, attempts, their results and receipts.
    case sender(SenderRecord)

    /// The JSON `type` of this record.
    public var type: String {
        switch self {
        case .scoreComputed: "score.computed"
        case .contactsSyncCompleted: "contacts.sync_completed"
        case .reminderUpserted: "reminder.upserted"
        case .reminderCancelled: "reminder.cancelled"
        case .accessRequested: "access.requested"
        case .securityNewSignin: "security.new_signin"
        case .securitySuspiciousActivity: "security.suspicious_activity"
        case .userSignedUp: "user.signed_up"
        case .appOpened: "app.opened"
        case .notificationOpened: "notification.opened"
        case .notificationDismissed: "notification.dismissed"
        case .settingsChanged: "user.settings_changed"
        case .permissionChanged: "permission.changed"
        case .userAction: "user.action"
        case .scoreViewed: "score.viewed"
        case .intent: "intent"
        case .sectionItem: "section.item"
        case .retentionEvent: "retention.event"
        case .tick: "tick"
        case .delivery: "delivery"
        case .decision: "decision"
        case .sender(let record): record.type
        }
    }

    /// The payload as an existential, for code that works on any payload. The hot paths use
    /// `visitPayload` instead: a payload wider than three words is copied into a heap-allocated
    /// box each time it becomes an `any RecordPayload`.
    public var payload: any RecordPayload { visitPayload(PayloadExistential()) }

    /// `visitor` applied to the payload as its own type, without an existential box.
    func visitPayload<Visitor: RecordPayloadVisitor>(_ visitor: Visitor) throws(Visitor.Failure) -> Visitor.Result {
        switch self {
        case .scoreComputed(let p): try visitor.visit(p)
        case .contactsSyncCompleted(let p): try visitor.visit(p)
        case .reminderUpserted(let p): try visitor.visit(p)
        case .reminderCancelled(let p): try visitor.visit(p)
        case .accessRequested(let p): try visitor.visit(p)
        case .securityNewSignin(let p), .securitySuspiciousActivity(let p): try visitor.visit(p)
        case .userSignedUp(let p): try visitor.visit(p)
        case .appOpened(let p): try visitor.visit(p)
        case .notificationOpened(let p), .notificationDismissed(let p): try visitor.visit(p)
        case .settingsChanged(let p): try visitor.visit(p)
        case .permissionChanged(let p): try visitor.visit(p)
        case .userAction(let p): try visitor.visit(p)
        case .scoreViewed(let p): try visitor.visit(p)
        case .intent(let p): try visitor.visit(p)
        case .sectionItem(let p): try visitor.visit(p)
        case .retentionEvent(let p): try visitor.visit(p)
        case .tick(let p): try visitor.visit(p)
        case .delivery(let p): try visitor.visit(p)
        case .decision(let p): try visitor.visit(p)
        case .sender(let record): try record.visitPayload(visitor)
        }
    }

    /// Read for every record folded and every output keyed, so without an existential box.
    public var id: String { visitPayload(PayloadID()) }
    public var userId: String { visitPayload(PayloadUserID()) }

    /// Whether this is one of the `rin.app.activity` record types.
    public var isActivity: Bool {
        switch self {
        case .userSignedUp, .appOpened, .notificationOpened, .notificationDismissed, .settingsChanged,
            .permissionChanged, .userAction, .scoreViewed:
            true
        default:
            false
        }
    }
}

extension FleetRecord: Codable {
    private enum HeaderKeys: String, CodingKey { case v, type }

    public init(from decoder: any Decoder) throws {
        let header = try decoder.container(keyedBy: HeaderKeys.self)
        let version = try header.decode(Int.self, forKey: .v)
        guard version == 1 else {
            throw DecodingError.dataCorruptedError(forKey: .v, in: header, debugDescription: "unsupported version \(version)")
        }
        let type = try header.decode(String.self, forKey: .type)
        guard let decode = FleetRecord.decoders[type] ?? SenderRecord.decoders[type] else {
            throw DecodingError.dataCorruptedError(forKey: .type, in: header, debugDescription: "unknown type \(RecordError.quote(type))")
        }
        self = try decode(decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var header = encoder.container(keyedBy: HeaderKeys.self)
        try header.encode(1, forKey: .v)
        try header.encode(type, forKey: .type)
        try payload.encode(to: encoder)
    }

    private static let decoders: [String: @Sendable (any Decoder) throws -> FleetRecord] = [
        "score.computed": { .scoreComputed(try ScoreComputed(from: $0)) },
        "contacts.sync_completed": { .contactsSyncCompleted(try ContactsSyncCompleted(from: $0)) },
        "reminder.upserted": { .reminderUpserted(try ReminderUpserted(from: $0)) },
        "reminder.cancelled": { .reminderCancelled(try ReminderCancelled(from: $0)) },
        "access.requested": { .accessRequested(try AccessRequested(from: $0)) },
        "security.new_signin": { .securityNewSignin(try SecurityAlert(from: $0)) },
        "security.suspicious_activity": { .securitySuspiciousActivity(try SecurityAlert(from: $0)) },
        "user.signed_up": { .userSignedUp(try UserSignedUp(from: $0)) },
        "app.opened": { .appOpened(try AppOpened(from: $0)) },
        "notification.opened": { .notificationOpened(try NotificationInteraction(from: $0)) },
        "notification.dismissed": { .notificationDismissed(try NotificationInteraction(from: $0)) },
        "user.settings_changed": { .settingsChanged(try SettingsChanged(from: $0)) },
        "permission.changed": { .permissionChanged(try PermissionChanged(from: $0)) },
        "user.action": { .userAction(try UserAction(from: $0)) },
        "score.viewed": { .scoreViewed(try ScoreViewed(from: $0)) },
        "intent": { .intent(try Intent(from: $0)) },
        "section.item": { .sectionItem(try SectionItem(from: $0)) },
        "retention.event": { .retentionEvent(try RetentionEvent(from: $0)) },
        "tick": { .tick(try Tick(from: $0)) },
        "delivery": { .delivery(try Delivery(from: $0)) },
        "decision": { .decision(try Decision(from: $0)) },
    ]
}

/// Turns record bytes into validated `FleetRecord`s and back, with errors an operator can act on.
///
/// Encoding sorts keys, so the same record always yields the same bytes (crash equivalence and
/// replay compare output byte for byte).
public enum RecordCodec {
    /// Decodes and validates one record read from `topic`. Fails when the JSON is malformed, a
    /// required field is missing or has the wrong type, a value is out of range, the `type` is
    /// unknown, or the type does not belong on `topic`.
    public static func decode(_ bytes: some Collection<UInt8>, topic: String) throws(RecordError) -> FleetRecord {
        let record = try decode(bytes)
        // A first generation's topic is its base name: looked up as it is before parsing a
        // generation suffix (no base name ends in one), a twentieth of decoding an intent.
        if let allowed = AllowedTypes.on(topic) ?? AllowedTypes.on(Topics.generationBase(of: topic).base),
           !AllowedTypes.list(allowed, contains: record.type) {
            throw RecordError("type '\(record.type)' does not belong on topic '\(topic)'")
        }
        return record
    }

    /// `Topics.allowedTypes` as lists, searched by length and bytes.
    ///
    /// Why: hashing the topic's name and then the record's type (SipHash over each string's
    /// bytes) cost some 800 instructions a record; a name of the right length is rare, so a
    /// scan compares a few lengths and one run of bytes (`Benchmarks/README.md`, "Runtime,
    /// tenth round").
    ///
    /// The names are kept as their UTF-8 bytes, so a length is a field read and the string being
    /// looked up is opened once, not once per name (a `utf8.count` and two `withUTF8Bytes` calls
    /// per name compared, ~300 instructions a record; "Runtime, fourteenth round").
    private enum AllowedTypes {
        static let table: [(topic: [UInt8], types: [[UInt8]])] = Topics.allowedTypes
            .map { (topic: Array($0.key.utf8), types: $0.value.sorted().map { Array($0.utf8) }) }
            .sorted { $0.topic.lexicographicallyPrecedes($1.topic) }

        static func on(_ topic: String) -> [[UInt8]]? {
            topic.withUTF8Bytes { topic in
                for entry in table where sameBytes(entry.topic, topic) { return entry.types }
                return nil
            }
        }

        static func list(_ types: [[UInt8]], contains type: String) -> Bool {
            type.withUTF8Bytes { type in types.contains { sameBytes($0, type) } }
        }

        /// `a == b` for the names here (ASCII names: equal exactly when their bytes are).
        private static func sameBytes(_ a: [UInt8], _ b: UnsafeBufferPointer<UInt8>) -> Bool {
            guard a.count == b.count else { return false }
            return a.withUnsafeBufferPointer { a in
                // Of the same length: without storage, both are empty.
                guard let left = a.baseAddress, let right = b.baseAddress else { return true }
                return memcmp(left, right, a.count) == 0
            }
        }
    }

    /// Decodes and validates one record, whatever topic it came from.
    ///
    /// Reads the bytes once into a tree (`JSONReader`, in the dialect `JSONDecoder` accepts) and
    /// decodes the record from it (`JSONNodeDecoder`, with `JSONDecoder`'s errors), several
    /// times faster than `JSONDecoder` (Benchmarks/RecordCodecProfile). Differences from
    /// `JSONDecoder`: integers beyond 64 bits in free-form `JSONValue` fields are refused
    /// instead of rounded to a `Double`, and malformed number tokens in a typed field, or
    /// invalid JSON in general, all read "not valid JSON".
    public static func decode(_ bytes: some Collection<UInt8>) throws(RecordError) -> FleetRecord {
        // Intents and app events written plainly are read straight from the bytes
        // (`PlainRecordDecoding`); everything else, and anything unusual about them, through the tree.
        if let record = bytes.withContiguousStorageIfAvailable(PlainRecordDecoding.record) ?? nil {
            return try validated(record)
        }
        let node: JSONNode
        do {
            node = try JSONReader.read(bytes, dialect: .foundationCompatible)
        } catch {
            throw RecordError("not valid JSON")
        }
        // Sizes first (`RecordLimits`): no error below may quote an oversized value.
        try RecordLimits.standard.checkFields(node)
        let record: FleetRecord
        do {
            record = try RecordDirectDecoding.record(node) ?? FleetRecord(from: JSONNodeDecoder(node))
        } catch let error as DecodingError {
            throw RecordError(describe(error))
        } catch {
            throw RecordError("not a JSON record: \(error)")
        }
        return try validated(record)
    }

    /// `record`, decoded, once it has its ids and its payload's own checks pass.
    private static func validated(_ record: consuming FleetRecord) throws(RecordError) -> FleetRecord {
        try requireNonEmpty(record.id, "id")
        if case .tick = record {} else { try requireNonEmpty(record.userId, "user_id") }
        try record.visitPayload(PayloadValidation())
        return record
    }

    /// The canonical bytes of `record`: UTF-8 JSON with sorted keys, byte for byte what
    /// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes, several times faster
    /// (`CanonicalJSONEncoder`; Benchmarks/RecordCodecProfile).
    public static func encode(_ record: FleetRecord) -> [UInt8] {
        Writer().encode(record)
    }

    /// Encodes several records in a row, each to the same bytes as `RecordCodec.encode(_:)`.
    ///
    /// Why: each `encode(_:)` allocates a writing session and its buffer and frees both, a
    /// tenth of what a small record's encoding costs; a fold step writes two or three records,
    /// and its encoder keeps one session for them all. Noncopyable, so the session has one
    /// owner and is never shared between tasks.
    public struct Writer: ~Copyable {
        private let session = CanonicalJSONSession()

        public init() {}

        /// The canonical bytes of `record`, as `RecordCodec.encode(_:)` writes them.
        public func encode(_ record: FleetRecord) -> [UInt8] {
            do {
                return try CanonicalJSONEncoder.encode(record, in: session)
            } catch {
                // Our own value types always encode; reaching this is a programming error.
                preconditionFailure("encoding \(record.type) failed: \(error)")
            }
        }

        /// The same bytes, for a record the caller can reach mutably (an element of an array
        /// it owns); `record` is not changed.
        ///
        /// Why `inout`: read through an array's subscript to be passed on, the record was
        /// copied first (a retain and a release of each of its strings, ~600 instructions for a
        /// decision), since the optimiser cannot tell that nothing writes the element meanwhile;
        /// exclusive access tells it.
        public func encode(inPlace record: inout FleetRecord) -> [UInt8] {
            encode(record)
        }
    }

    public static func encodeString(_ record: FleetRecord) -> String {
        String(decoding: encode(record), as: UTF8.self)
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            var parts: [String] = []
            for key in codingPath + (last.map { [$0] } ?? []) {
                if let i = key.intValue { parts.append("[\(i)]") } else {
                    parts.append((parts.isEmpty ? "" : ".") + key.stringValue)
                }
            }
            return parts.joined()
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing required field '\(path(context.codingPath, key))'"
        case .typeMismatch(let type, let context):
            return "field '\(path(context.codingPath))' has the wrong type (expected \(jsonKind(type)))"
        case .valueNotFound(let type, let context):
            return "field '\(path(context.codingPath))' is null (expected \(jsonKind(type)))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "not valid JSON"
            }
            let field = path(context.codingPath)
            let detail = quotingValues(context.debugDescription)
            if field == "type" || field == "v" { return detail }
            return "field '\(field)': \(detail)"
        @unknown default:
            return "\(error)"
        }
    }

    /// Foundation's and the standard library's messages quote the offending value in full
    /// ("Cannot initialize EntrySource from invalid String value …"): the value is re-quoted
    /// short (`RecordError.quote`).
    static func quotingValues(_ description: String) -> String {
        let marker = " from invalid String value "
        guard let range = description.range(of: marker) else { return description }
        return String(description[..<range.upperBound]) + RecordError.quote(description[range.upperBound...])
    }

    private static func jsonKind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "\(type)"
        }
    }
}

/// Something done with a record's payload as its own type (`FleetRecord.visitPayload`).
protocol RecordPayloadVisitor {
    associatedtype Result
    associatedtype Failure: Error
    func visit<Payload: RecordPayload>(_ payload: Payload) throws(Failure) -> Result
}

/// The payload as `any RecordPayload` (`FleetRecord.payload`, `SenderRecord.payload`).
struct PayloadExistential: RecordPayloadVisitor {
    func visit<Payload: RecordPayload>(_ payload: Payload) -> any RecordPayload { payload }
}

private struct PayloadID: RecordPayloadVisitor {
    func visit<Payload: RecordPayload>(_ payload: Payload) -> String { payload.id }
}

private struct PayloadUserID: RecordPayloadVisitor {
    func visit<Payload: RecordPayload>(_ payload: Payload) -> String { payload.userId }
}

private struct PayloadValidation: RecordPayloadVisitor {
    func visit<Payload: RecordPayload>(_ payload: Payload) throws(RecordError) { try payload.validate() }
}
