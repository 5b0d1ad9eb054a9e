import Foundation

/// Rows of strings in a temporary file: each row its field count, then each field's UTF-8
/// length and bytes (little-endian 32-bit counts), so any text round-trips, newlines and
/// separators included. Writes and reads go through 64 KiB buffers.
final class RowFileWriter {
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(creating url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw SpillError.cannotCreate(url.path)
        }
        handle = try FileHandle(forWritingTo: url)
        buffer.reserveCapacity(RowFile.bufferBytes + 4096)
    }

    func write(_ row: [String]) throws {
        append(UInt32(row.count))
        for field in row {
            let bytes = field.utf8
            append(UInt32(bytes.count))
            buffer.append(contentsOf: bytes)
        }
        if buffer.count >= RowFile.bufferBytes { try flush() }
    }

    func close() throws {
        try flush()
        try handle.close()
    }

    private func append(_ count: UInt32) {
        withUnsafeBytes(of: count.littleEndian) { buffer.append(contentsOf: $0) }
    }

    private func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Reads back, in order, the rows a `RowFileWriter` wrote.
final class RowFileReader {
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0
    private var atEnd = false

    init(url: URL) throws { handle = try FileHandle(forReadingFrom: url) }

    deinit { try? handle.close() }

    /// The next row, or nil at the end of the file.
    func next() throws -> [String]? {
        guard try available(4) else {
            guard position == buffer.count else { throw SpillError.truncated }
            return nil
        }
        let fields = Int(readCount())
        var row: [String] = []
        row.reserveCapacity(fields)
        for _ in 0..<fields {
            guard try available(4) else { throw SpillError.truncated }
            let length = Int(readCount())
            guard try available(length) else { throw SpillError.truncated }
            row.append(String(decoding: buffer[position..<position + length], as: UTF8.self))
            position += length
        }
        return row
    }

    private func readCount() -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(buffer[position + index]) << (8 * index) }
        position += 4
        return value
    }

    /// Whether `count` more bytes are buffered, reading on from the file when not.
    private func available(_ count: Int) throws -> Bool {
        while buffer.count - position < count {
            guard !atEnd else { return false }
            buffer.removeFirst(position)
            position = 0
            if let data = try handle.read(upToCount: max(RowFile.bufferBytes, count)), !data.isEmpty {
                buffer.append(contentsOf: data)
            } else {
                atEnd = true
            }
        }
        return true
    }
}

enum RowFile {
    static let bufferBytes = 1 << 16
}

/// A temporary spill file that could not be written or read back whole.
public enum SpillError: Error, CustomStringConvertible, Sendable {
    case cannotCreate(String)
    case truncated

    public var description: String {
        switch self {
        case .cannotCreate(let path): "cannot create \(path) to sort a large table on disk: set TMPDIR to a writable directory (in the delivery-worker pod, /tmp is one)"
        case .truncated: "a temporary spill file ended in the middle of a row"
        }
    }
}
