import Foundation
import HeapModule

/// Rows sorted by their first `keyFields` fields (compared as strings, field by field) in
/// bounded memory, whatever their number: rows are kept until `runLength` of them are held,
/// then sorted and written to a run file in a temporary directory; reading merges the runs.
/// So a tool that must print a whole topic in some order (`fleetctl decisions`) holds
/// `runLength` rows and one buffer per run, not the topic. Rows with equal keys come out in no
/// particular order. Each run file is removed once read to its end, the directory when the
/// sorter goes.
final class SpillSorter {
    /// At most this many runs are merged at once; more are first merged in groups.
    static let fanIn = 64

    let keyFields: Int
    let runLength: Int
    /// Made at the first spill: rows that fit in one run never touch the disk (a container with a
    /// read-only root file system and no writable TMPDIR still prints small tables).
    private var directory: URL?
    private var held: [[String]] = []
    private var runs: [URL] = []
    private var created = 0

    init(keyFields: Int, runLength: Int) {
        precondition(keyFields >= 1 && runLength >= 1)
        self.keyFields = keyFields
        self.runLength = runLength
    }

    deinit {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// Every row has at least `keyFields` fields.
    func append(_ row: [String]) throws {
        held.append(row)
        if held.count >= runLength { try spill() }
    }

    /// Every row appended so far, in key order, to be read once; the sorter is left empty.
    func sorted() throws -> SortedRows {
        guard !runs.isEmpty else {
            sortHeld()
            defer { held = [] }
            return SortedRows(held: held, owner: self)
        }
        try spill()
        while runs.count > Self.fanIn {
            runs = try stride(from: 0, to: runs.count, by: Self.fanIn).map { first in
                try merge(Array(runs[first..<min(first + Self.fanIn, runs.count)]))
            }
        }
        defer { runs = [] }
        return SortedRows(merging: try MergedRuns(runs, keyFields: keyFields), owner: self)
    }

    /// Hands every row appended so far to `body` in key order, and empties the sorter.
    func drain(_ body: ([String]) throws -> Void) throws {
        let rows = try sorted()
        while let row = try rows.next() { try body(row) }
    }

    private func sortHeld() {
        let keyFields = keyFields
        held.sort { SpillSorter.precedes($0, $1, keyFields: keyFields) }
    }

    private func spill() throws {
        guard !held.isEmpty else { return }
        sortHeld()
        let run = try newRun()
        let writer = try RowFileWriter(creating: run)
        for row in held { try writer.write(row) }
        try writer.close()
        held.removeAll(keepingCapacity: true)
        runs.append(run)
    }

    private func merge(_ group: [URL]) throws -> URL {
        let run = try newRun()
        let writer = try RowFileWriter(creating: run)
        let merged = try MergedRuns(group, keyFields: keyFields)
        while let row = try merged.next() { try writer.write(row) }
        try writer.close()
        return run
    }

    private func newRun() throws -> URL {
        let directory = try self.directory ?? makeDirectory()
        created += 1
        return directory.appendingPathComponent("run-\(created)")
    }

    private func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fleetctl-spill-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw SpillError.cannotCreate(directory.path)
        }
        self.directory = directory
        return directory
    }

    static func precedes(_ a: [String], _ b: [String], keyFields: Int) -> Bool {
        for index in 0..<keyFields where a[index] != b[index] { return a[index] < b[index] }
        return false
    }
}

/// A sorter's rows in key order, read once: from memory when they never spilled, else merged
/// from the run files (which go with the sorter).
final class SortedRows {
    private var held: IndexingIterator<[[String]]>?
    private let merged: MergedRuns?
    /// Keeps the run files' directory while they are read.
    private let owner: SpillSorter

    fileprivate init(held: [[String]], owner: SpillSorter) {
        self.held = held.makeIterator()
        merged = nil
        self.owner = owner
    }

    fileprivate init(merging merged: MergedRuns, owner: SpillSorter) {
        held = nil
        self.merged = merged
        self.owner = owner
    }

    func next() throws -> [String]? {
        if let merged { return try merged.next() }
        return held?.next()
    }
}

/// Sorted run files read as one sorted sequence: the smallest head of all runs, each time.
fileprivate final class MergedRuns {
    private struct Head: Comparable {
        var row: [String]
        var run: Int
        var keyFields: Int

        static func < (a: Head, b: Head) -> Bool {
            if SpillSorter.precedes(a.row, b.row, keyFields: a.keyFields) { return true }
            if SpillSorter.precedes(b.row, a.row, keyFields: a.keyFields) { return false }
            return a.run < b.run
        }

        static func == (a: Head, b: Head) -> Bool { !(a < b) && !(b < a) }
    }

    private let runs: [URL]
    private let readers: [RowFileReader]
    private var heads = Heap<Head>()

    init(_ runs: [URL], keyFields: Int) throws {
        self.runs = runs
        readers = try runs.map { try RowFileReader(url: $0) }
        for (index, reader) in readers.enumerated() {
            if let row = try reader.next() {
                heads.insert(Head(row: row, run: index, keyFields: keyFields))
            } else {
                try? FileManager.default.removeItem(at: runs[index])
            }
        }
    }

    func next() throws -> [String]? {
        guard var head = heads.popMin() else { return nil }
        let row = head.row
        if let following = try readers[head.run].next() {
            head.row = following
            heads.insert(head)
        } else {
            // Read to its end: its disk space goes now, not with the sorter.
            try? FileManager.default.removeItem(at: runs[head.run])
        }
        return row
    }
}
