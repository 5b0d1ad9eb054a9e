/// A line of notification copy with placeholders, parsed once when the profile loads.
///
/// Syntax: `{name}` inserts a value; `{name|singular|plural}` picks a word by whether the
/// integer value of `name` is 1, so "1 possible duplicate found." and "3 possible duplicates
/// found." come from one template. Copy lives in the profile (P-PROF-1), never in code.
public struct CopyTemplate: Hashable, Sendable, CustomStringConvertible {
    /// A placeholder carries the `ComputedSlot` of its name (nil for a data field), resolved
    /// here once, so that rendering finds a value a merge rule computed by number.
    enum Segment: Hashable, Sendable {
        case text(String)
        case value(String, slot: ComputedSlot?)
        case plural(key: String, slot: ComputedSlot?, one: String, other: String)
    }

    let segments: [Segment]
    /// The template as written in the profile.
    public let source: String
    /// Every placeholder name the template reads.
    public let placeholders: Set<String>

    /// Parses `source`; the error text says what is wrong (the caller adds the field path).
    public init(parsing source: String) throws(TemplateSyntaxError) {
        var segments: [Segment] = []
        var names: Set<String> = []
        var literal = ""
        var index = source.startIndex
        while index < source.endIndex {
            let character = source[index]
            if character == "}" { throw TemplateSyntaxError("unmatched '}'") }
            guard character == "{" else {
                literal.append(character)
                index = source.index(after: index)
                continue
            }
            guard let close = source[index...].firstIndex(of: "}") else { throw TemplateSyntaxError("unclosed '{'") }
            let body = source[source.index(after: index)..<close]
            if body.contains("{") { throw TemplateSyntaxError("nested '{'") }
            let parts = body.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard let key = parts.first, !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
                throw TemplateSyntaxError("placeholder '{\(body)}' needs a name of letters, digits and '_'")
            }
            if !literal.isEmpty { segments.append(.text(literal)); literal = "" }
            switch parts.count {
            case 1: segments.append(.value(key, slot: ComputedSlot(name: key)))
            case 3: segments.append(.plural(key: key, slot: ComputedSlot(name: key), one: parts[1], other: parts[2]))
            default: throw TemplateSyntaxError("placeholder '{\(body)}' must be {name} or {name|singular|plural}")
            }
            names.insert(key)
            index = source.index(after: close)
        }
        if !literal.isEmpty { segments.append(.text(literal)) }
        self.segments = segments
        self.source = source
        self.placeholders = names
    }

    /// Fills the placeholders from `values`. Callers check `placeholders` against what they
    /// can provide before rendering (the profile loader and intent validation do), so a missing
    /// value cannot reach a user; it renders empty rather than trapping.
    public func render(_ values: [String: String]) -> String {
        render { key, _ in values[key] }
    }

    /// As `render(_:)`, reading each placeholder's value from `value`, given its name and its
    /// `ComputedSlot` (nil renders empty).
    ///
    /// Why not `+=`: copy is rendered for nearly every decision, and each `String` append
    /// cost several hundred instructions (capacity checks, growth, a slice copy). The pieces
    /// are gathered first (on the stack), then their UTF-8 bytes are written into one string
    /// of the exact length: one allocation and a plain copy per piece. Same bytes.
    func render(_ value: (String, ComputedSlot?) -> String?) -> String {
        // Copy without placeholders (most titles and deep links) is its own rendering: hand out
        // the parsed string itself, sharing its storage, instead of building a copy of it.
        if segments.count == 1, case .text(let text) = segments[0] { return text }
        return withUnsafeTemporaryAllocation(of: String.self, capacity: segments.count) { pieces in
            var length = 0
            var count = 0
            // Pieces `written..<count` are still initialised (the writing loop moves them out
            // one by one, so each is released by the specialised `String` code; deinitialising
            // the buffer at the end went through the generic `swift_arrayDestroy`).
            var written = 0
            defer { _ = pieces[written..<count].deinitialize() }
            // By index: `for segment in segments` copied each segment (a retain and a release
            // of its strings) before the piece took its own reference.
            for i in segments.indices {
                let piece: String
                switch segments[i] {
                case .text(let text): piece = text
                case .value(let key, let slot): piece = value(key, slot) ?? ""
                case .plural(let key, let slot, let one, let other):
                    let n = value(key, slot).flatMap { Int($0) }
                    piece = (n == 1 || n == -1) ? one : other
                }
                length += piece.utf8.count
                pieces.initializeElement(at: count, to: piece)
                count += 1
            }
            return String(unsafeUninitializedCapacity: length) { buffer in
                var end = 0
                while written < count {
                    var piece = pieces.moveElement(from: written)
                    written += 1
                    end = piece.withUTF8 { bytes in
                        end + UnsafeMutableBufferPointer(rebasing: buffer[end...]).initialize(fromContentsOf: bytes)
                    }
                }
                return end
            }
        }
    }

    public var description: String { source }
}

public struct TemplateSyntaxError: Error, Hashable, Sendable {
    public var message: String
    init(_ message: String) { self.message = message }
}
