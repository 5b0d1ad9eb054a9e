public import FleetModel
public import Kafka

/// One partition's changelog read in offset order under the restore rule, keeping images
/// undecoded: per user the last state record below the committed offset, the last such log
/// time, and the first cut (DESIGN.md principle 5). What a restore and a migration's re-key read.
///
/// An image whose record carries the state's wake-up is held (`held`: `PartitionFold` decodes it
/// on first touch); any other is kept in `images`, to be decoded once read. A user is in one of
/// the two, by its last committed record.
///
/// Why not generic over the state: this runs once per changelog record, a million times in a
/// large restore, and in code generic over the state every access to a generic struct's field
/// looked its layout up at run time (a tenth of the reader thread). Nothing here needs the
/// state's type; the one thing that depends on it, the newest image format the build decodes,
/// is given at `init`.
public struct ChangelogImages: Sendable {
    private var rule: ChangelogRule
    public var committed: Int64? { rule.committed }
    /// Users whose last committed record carries the wake-up: left undecoded.
    public private(set) var held: [String: HeldStateImage] = [:]
    /// Users whose last committed image must be decoded at restore (no wake-up recorded, a JSON
    /// envelope, or a format newer than this build reads).
    public private(set) var images: [String: KeptStateImage] = [:]
    public var logTime: Timestamp? { rule.logTime }
    /// The first cut found: a migration stopped folding this partition at that offset.
    public var cut: (generation: Int, committedOffset: Int64)? { rule.cut }
    /// Changelog records read (states, positions and markers, valid or not).
    public private(set) var recordsRead = 0
    /// The newest image format this build decodes (nil: the state has no binary image, so
    /// nothing is held). A newer image is kept for decoding, failing the restore as it names.
    private let readableFormat: UInt32?

    /// - Parameter committed: the partition's committed input offset; nil when nothing was
    ///   committed yet, so only records a migration re-keyed into the partition count.
    public init<State>(committed: Int64?, decoding _: State.Type) {
        rule = ChangelogRule(committed: committed)
        readableFormat = (State.self as? any BinaryStateImage.Type)?.stateImageFormat
    }

    /// Sizes the held images for `users` users up front: a large restore otherwise spends a
    /// third of its reading time growing the dictionary (rehashing every key at each doubling).
    public mutating func reserveCapacity(users: Int) {
        held.reserveCapacity(users)
    }

    public var userCount: Int { held.count + images.count }

    /// Reads one record lent by the restore's reader: a state record costs its key and, when
    /// committed, a copy of its image; anything else is copied and read in full.
    public mutating func read(_ record: KafkaRecordView, topic: String) throws {
        try read(
            offset: record.offset,
            isState: record.header(ChangelogRecords.kindHeader).map { $0.elementsEqual(ChangelogRecords.stateKindBytes) } ?? false,
            key: record.key, value: record.value
        ) { record.message(topic: topic) }
    }

    /// `read` of a record already copied.
    public mutating func read(_ message: KafkaMessage) throws {
        let isState = message.header(ChangelogRecords.kindHeader).map { $0.elementsEqual(ChangelogRecords.stateKindBytes) } ?? false
        try (message.key ?? []).withUnsafeBytes { key in
            try (message.value ?? []).withUnsafeBytes { value in
                try read(
                    offset: message.offset, isState: isState, key: message.key == nil ? nil : key,
                    value: message.value == nil ? nil : value
                ) { message }
            }
        }
    }

    private mutating func read(
        offset: Int64, isState: Bool, key: UnsafeRawBufferPointer?, value: UnsafeRawBufferPointer?,
        copied: () -> KafkaMessage
    ) throws {
        recordsRead += 1
        guard isState else {
            rule.apply(try ChangelogRecords.controlEntry(of: copied()))
            return
        }
        if let value, let key, value.first != UInt8(ascii: "{"),
           let peek = ChangelogRecords.peekState(value), peek.format == ChangelogRecords.envelopeFormat {
            guard rule.isCommitted(peek.inputOffset) else { return }
            let user = String(decoding: key, as: UTF8.self)
            let image = Array(value[peek.image])
            if case .recorded(let wakeUp) = peek.wakeUp, let readableFormat,
               let format = StateImageFormat.leadingFormat(of: image), format <= readableFormat {
                held[user] = HeldStateImage(image: image, wakeUp: wakeUp)
                if !images.isEmpty { images[user] = nil }
            } else {
                keep(KeptStateImage(image: image, offset: offset, read: nil), for: user)
            }
            return
        }
        // A JSON envelope (before binary images), or one this fast path does not read: the
        // full reader takes it, or names what is wrong with it.
        let image = try ChangelogRecords.stateImage(of: copied())
        guard rule.isCommitted(image.inputOffset) else { return }
        keep(KeptStateImage(image: [], offset: offset, read: image), for: image.userId)
    }

    private mutating func keep(_ image: KeptStateImage, for user: String) {
        images[user] = image
        if !held.isEmpty { held[user] = nil }
    }

}

/// The restore rule for everything but the states themselves: which input offsets count as
/// committed, the log time of the last committed position, and the first cut. The one
/// definition of it, for `ChangelogImages` (restores, a migration's re-key) and
/// `StateRestorer.Builder` (a changelog read with every state decoded).
public struct ChangelogRule: Sendable {
    public let committed: Int64?
    public private(set) var logTime: Timestamp?
    public private(set) var cut: (generation: Int, committedOffset: Int64)?

    public init(committed: Int64?) { self.committed = committed }

    /// Nothing committed yet counts as offset 0: only records a migration re-keyed into this
    /// generation (input offset -1) are valid then.
    public func isCommitted(_ inputOffset: Int64) -> Bool {
        inputOffset < (committed ?? 0)
    }

    public mutating func apply(_ entry: ChangelogRecords.ControlEntry) {
        switch entry {
        case .position(let inputOffset, let time, _):
            if isCommitted(inputOffset) { logTime = time }
        case .marker:
            break
        case .cut(let generation, let offset):
            if cut == nil { cut = (generation, offset) }
        }
    }
}

/// A user's last committed image as a restore read it: a copy of the image (the only bytes of a
/// record the restore copies), or the record read by the full reader (JSON envelopes of versions
/// before binary images).
public struct KeptStateImage: Sendable {
    var image: [UInt8]
    /// The record's offset in the changelog partition, for errors.
    public var offset: Int64
    var read: ChangelogRecords.StateImage?

    public func state<State: Decodable>(as _: State.Type) throws(StateImageError) -> State {
        if let read { return try ChangelogRecords.state(of: read, as: State.self) }
        return try StateCoding.decode(image, as: State.self)
    }
}
