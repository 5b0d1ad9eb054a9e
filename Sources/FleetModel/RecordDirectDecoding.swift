// The record every upstream worker writes, intents, read straight from the tree.
//
// Why: `Decodable` costs a keyed container, generic metadata lookups and a boxed key per field;
// for the delivery worker, whose inbox is mostly intents, that was a tenth of its fold
// (Benchmarks/FoldProfile). Only the well-formed case is read here: anything unexpected (a
// missing or mistyped field, a header other than `"v":1`, a time that does not parse) gives nil,
// and the record goes through `FleetRecord(from:)`, which then fails with `JSONDecoder`'s error
// or decodes what this path does not. `RecordCodecDifferentialTests` checks both paths against
// `JSONDecoder` on random and mutated records.

enum RecordDirectDecoding {
    /// The record, when it is an intent read without surprises; nil otherwise.
    static func record(_ node: JSONNode) -> FleetRecord? {
        guard case .object(let members) = node else { return nil }
        var fields = IntentFields()
        for (key, value) in members {
            // `JSONDecoder` takes the first of duplicate names.
            switch key {
            case "v": if fields.v == nil { fields.v = value }
            case "type": if fields.type == nil { fields.type = value }
            case "id": if fields.id == nil { fields.id = value }
            case "user_id": if fields.userId == nil { fields.userId = value }
            case "notification": if fields.notification == nil { fields.notification = value }
            case "category": if fields.category == nil { fields.category = value }
            case "data": if fields.data == nil { fields.data = value }
            case "expires_at": if fields.expiresAt == nil { fields.expiresAt = value }
            case "source": if fields.source == nil { fields.source = value }
            default: continue
            }
        }
        return fields.intent().map(FleetRecord.intent)
    }

    private struct IntentFields {
        var v, type, id, userId, notification, category, data, expiresAt, source: JSONNode?

        func intent() -> Intent? {
            guard case .number(.int(1))? = v, case .string("intent")? = type,
                  case .string(let id)? = id, case .string(let userId)? = userId,
                  case .string(let notification)? = notification, case .string(let category)? = category,
                  let dataNode = data, let data = try? JSONValue.object(node: dataNode, path: .root),
                  let source = source.flatMap(Self.coordinates)
            else { return nil }
            var expires: Timestamp?
            switch expiresAt {
            case nil, .null?:
                expires = nil
            case .string(let text)?:
                guard let time = Timestamp(rfc3339: text) else { return nil }
                expires = time
            default:
                return nil
            }
            return Intent(
                id: id, userId: userId, notification: notification, category: category, data: data, expiresAt: expires,
                source: source)
        }

        static func coordinates(_ node: JSONNode) -> SourceCoordinates? {
            guard case .object(let members) = node else { return nil }
            var topic, partition, offset: JSONNode?
            for (key, value) in members {
                switch key {
                case "topic": if topic == nil { topic = value }
                case "partition": if partition == nil { partition = value }
                case "offset": if offset == nil { offset = value }
                default: continue
                }
            }
            guard case .string(let topicName)? = topic, let partition, let offset,
                  let partitionNumber: Int32 = try? NodeDecoding.integer(partition, .root),
                  let offsetNumber: Int64 = try? NodeDecoding.integer(offset, .root)
            else { return nil }
            return SourceCoordinates(topic: topicName, partition: partitionNumber, offset: offsetNumber)
        }
    }
}
