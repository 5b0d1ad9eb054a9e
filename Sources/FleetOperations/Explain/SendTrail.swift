public import FleetModel

/// What the sender made of a user's deliveries (issue 17 "Receipts"): per delivery, every attempt
/// with the provider's answer, and the receipts (one per channel), as `fleetctl explain` shows them
/// next to the decision that made the delivery.
///
/// A value read from the sender's topics by `SenderLog`; no I/O, so tests build it themselves.
public struct SendTrail: Hashable, Sendable {
    /// The topics a trail is read from: receipts, the fold's attempts, and the results the effect
    /// stage writes into the sender's inbox.
    public static let topics = [Topics.receipts, Topics.sendAttempts, Topics.senderInbox]

    /// Sender topics this fleet does not have (it runs no sender): what they would hold is not shown.
    public var missingTopics: [String]
    /// By delivery id (`delivery.id`, the sender's `delivery_id`).
    public var deliveries: [String: DeliverySends]

    public init(missingTopics: [String] = [], deliveries: [String: DeliverySends] = [:]) {
        self.missingTopics = missingTopics
        self.deliveries = deliveries
    }

    /// Whether the fleet has no receipts topic at all: no sender was ever deployed.
    public var senderAbsent: Bool { missingTopics.contains(Topics.receipts) }

    /// The sends of `delivery` (none yet when the sender has not taken it).
    public func sends(of delivery: Delivery) -> DeliverySends { deliveries[delivery.id] ?? DeliverySends() }
}

/// One delivery's attempts and receipts, in the order the sender wrote them.
public struct DeliverySends: Hashable, Sendable {
    public var attempts: [AttemptTrace]
    /// One per channel: a push receipt `fell_back` is followed by the email channel's own.
    public var receipts: [ReceiptTrace]

    public init(attempts: [AttemptTrace] = [], receipts: [ReceiptTrace] = []) {
        self.attempts = attempts
        self.receipts = receipts
    }

    /// Where the delivery stands as far as the sender's topics tell.
    public enum Progress: String, Hashable, Sendable {
        /// A receipt other than `fell_back` was written: nothing more will be tried.
        case final
        /// Attempts were made and no final receipt yet: the sender is still retrying, or waiting
        /// for an answer.
        case inProgress = "in_progress"
        /// No attempt and no receipt: the sender has not taken the delivery (not running, or
        /// behind).
        case notTaken = "not_taken"
    }

    public var progress: Progress {
        if receipts.contains(where: { $0.receipt.status != .fellBack }) { return .final }
        return attempts.isEmpty && receipts.isEmpty ? .notTaken : .inProgress
    }
}

/// One attempt the sender's fold decided, and the effect stage's answer to it if one was written.
public struct AttemptTrace: Hashable, Sendable {
    public var attempt: SendAttempt
    /// When the attempt was decided (the record's log time).
    public var at: Timestamp?
    public var result: SendResult?
    /// When the answer was written into the sender's inbox.
    public var answeredAt: Timestamp?

    public init(attempt: SendAttempt, at: Timestamp?, result: SendResult? = nil, answeredAt: Timestamp? = nil) {
        self.attempt = attempt; self.at = at; self.result = result; self.answeredAt = answeredAt
    }
}

/// A receipt and when it was written.
public struct ReceiptTrace: Hashable, Sendable {
    public var receipt: Receipt
    public var at: Timestamp?

    public init(receipt: Receipt, at: Timestamp?) { self.receipt = receipt; self.at = at }
}
