/// A restored user's state still as the image its changelog record holds, with the wake-up the
/// writer recorded beside it (lazy restore, DESIGN.md principle 5).
///
/// Why: decoding a state image costs far more than reading its record, and most users of a
/// large partition are idle: restore schedules their timers from the recorded wake-ups and
/// `PartitionFold` decodes a user the first time a record or timer touches it. An image
/// typically takes less memory than its decoded state, so holding it costs nothing extra.
public struct HeldStateImage: Hashable, Sendable {
    /// The state's image as `StateCoding.encode` wrote it.
    public var image: [UInt8]
    /// `UserProcessor.nextWakeUp` of the state the image holds, as its writer computed it.
    public var wakeUp: Timestamp?

    @inlinable
    public init(image: [UInt8], wakeUp: Timestamp?) {
        self.image = image
        self.wakeUp = wakeUp
    }
}

/// Decodes a held image into a processor's state (`StateCoding.decode` in the runtime).
public typealias StateImageDecoder<State> = @Sendable ([UInt8]) throws(StateImageError) -> State

/// A held image that did not decode when a timer came due for its user: that user's timer was
/// dropped (a record for the user is dead-lettered instead, see `PartitionFold`).
public struct UndecodableState: Hashable, Sendable {
    public var userId: String
    public var error: StateImageError

    public init(userId: String, error: StateImageError) {
        self.userId = userId
        self.error = error
    }
}
