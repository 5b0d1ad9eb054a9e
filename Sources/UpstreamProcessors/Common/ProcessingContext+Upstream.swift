import FleetModel

/// The three kinds of record upstream workers write to `rin.delivery.inbox`. Each takes the
/// next log-derived id, so the order of the calls in a step fixes the ids (P-IDEM-1).
extension ProcessingContext {
    /// Raises an intent whose `source` is the record being processed (or, for timers, the
    /// record whose time made them due).
    mutating func emitIntent(_ notification: UpstreamNotification, data: JSONObject, expiresAt: Timestamp? = nil) {
        let intent = Intent(
            id: nextID(), userId: userId, notification: notification.rawValue, category: notification.category,
            data: data, expiresAt: expiresAt, source: ids.origin)
        emit(.intent(intent), to: Topics.deliveryInbox)
    }

    /// Produces or replaces (same `itemId`) a smart-section item.
    mutating func emitSectionItem(section: String, itemId: String, item: JSONObject, expiresAt: Timestamp? = nil) {
        let record = SectionItem(id: nextID(), userId: userId, section: section, itemId: itemId, item: item, expiresAt: expiresAt)
        emit(.sectionItem(record), to: Topics.deliveryInbox)
    }

    /// `retention.value_event_delivered`; the delivery engine adds `user_was_active`.
    mutating func emitValueEvent(_ type: ValueEventType) {
        emitRetentionEvent(RetentionEventName.valueEventDelivered, properties: ["event_type": .string(type.rawValue)])
    }

    /// `retention.churn_signal_detected`; the delivery engine adds `user_age_days`.
    mutating func emitChurnSignal(_ type: ChurnSignalType) {
        emitRetentionEvent(RetentionEventName.churnSignalDetected, properties: ["signal_type": .string(type.rawValue)])
    }

    private mutating func emitRetentionEvent(_ name: String, properties: JSONObject) {
        let event = RetentionEvent(id: nextID(), userId: userId, event: name, properties: properties)
        emit(.retentionEvent(event), to: Topics.deliveryInbox)
    }
}

extension JSONValue {
    static func integer(_ value: Int) -> JSONValue { .int(Int64(value)) }
    static func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }
}
