import DeliveryPolicy
import FleetModel
import FleetSimulation
import FleetWorkers
import SenderCore
import Foundation
import Testing
import UpstreamProcessors

/// The corpus of state images every released version wrote (Fixtures/state-images), which
/// every later version must decode to the same state (DESIGN.md principle 5):
///
///     Fixtures/state-images/<version>/<worker>/<n>.img    an image as that version wrote it
///     Fixtures/state-images/<version>/<worker>/<n>.json   the state it holds, as canonical JSON
///
/// `json` is the build before binary images (its images are the states' canonical JSON); `v1`
/// is binary format 1. A release that changes Protos/fleet_state.proto adds its directory
/// (`STATE_IMAGE_CORPUS=<version> swift test --filter StateImageCorpusTests`) and never edits an
/// older one. The states come from the whole fleet simulated over samples/ (every worker's
/// states, users with pending notifications, reminders, lapses, cool-downs).
@Suite("State image corpus")
struct StateImageCorpusTests {
    static let repository = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let corpus = repository.appending(path: "Tests/FleetWorkersTests/Fixtures/state-images")

    /// The workers whose states have binary images, hence a corpus. The sender's state is
    /// written as canonical JSON (it has no `BinaryStateImage` yet), and the simulator that
    /// generates the corpus does not run the sender.
    static let imagedWorkers = Worker.allCases.filter { $0 != .sender }

    @Test("the sender's state has no binary image: it is written and read back as canonical JSON")
    func senderStateIsJSON() throws {
        var state = SenderState()
        state.emailOptIn = true
        let image = try StateCoding.encode(state)
        #expect(image.first == UInt8(ascii: "{"))
        #expect(try StateCoding.decode(image, as: SenderState.self) == state)
    }

    @Test("every image of every released version decodes to the state it was written from")
    func releasedImagesDecode() throws {
        let versions = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        #expect(versions.contains("json") && versions.contains("v1"))
        var checked = 0
        for version in versions {
            for worker in Self.imagedWorkers {
                let directory = Self.corpus.appending(path: "\(version)/\(worker.rawValue)")
                guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
                for name in names.sorted() where name.hasSuffix(".img") {
                    let image = try [UInt8](Data(contentsOf: directory.appending(path: name)))
                    let expected = try String(contentsOf: directory.appending(path: name.dropLast(4) + ".json"), encoding: .utf8)
                    let decoded = try Self.json(of: image, worker: worker)
                    #expect(decoded == expected, "\(version)/\(worker.rawValue)/\(name)")
                    checked += 1
                }
            }
        }
        // Not vacuous: both versions, every worker with a binary image.
        #expect(checked >= 2 * Self.imagedWorkers.count)
    }

    @Test("schema evolution: an image with a field a later version added still decodes (the field is ignored), one without an optional field decodes to its default")
    func evolution() throws {
        var score = ScoreState()
        score.lastScore = 64
        score.lastBatchId = "b-7"
        let image = try score.binaryImage()
        // Field 99, varint 1: what a later version adding a field writes.
        #expect(try ScoreState(binaryImage: image + [0x98, 0x06, 0x01]) == score)
        // An image without the optional fields (an older version's, before they existed).
        let bare = try ScoreState(binaryImage: [0x08, 0x01])
        #expect(bare == ScoreState())
        // A newer format version is refused by name, not guessed.
        #expect(throws: StateImageError.self) { try ScoreState(binaryImage: [0x08, 0x02]) }
    }

    /// Writes the current version's images into `STATE_IMAGE_CORPUS`'s directory (and the JSON
    /// images of the build before, once); run by hand when a release changes the schema.
    @Test("regenerate the corpus", .enabled(if: ProcessInfo.processInfo.environment["STATE_IMAGE_CORPUS"] != nil))
    func regenerate() throws {
        let version = ProcessInfo.processInfo.environment["STATE_IMAGE_CORPUS"] ?? "v1"
        var simulator = try Simulator.fleet(profile: .shipped("rin"))
        for sample in ["samples/simulate-example.jsonl", "samples/demo-traffic.jsonl"] {
            let text = try String(contentsOf: Self.repository.appending(path: sample), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.allSatisfy(\.isWhitespace) {
                _ = try? simulator.feed(line: line)
            }
        }
        for stage in simulator.snapshot().stages {
            guard let worker = Worker(rawValue: stage.name) else { continue }
            for (index, user) in stage.users.enumerated() {
                let json = Array(user.state.utf8)
                let binary = try Self.binary(of: json, worker: worker)
                let expected = try Self.json(of: json, worker: worker)
                for (directory, image) in [(version, binary), ("json", json)] {
                    let folder = Self.corpus.appending(path: "\(directory)/\(worker.rawValue)")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    let file = folder.appending(path: "\(index).img")
                    if directory == "json", FileManager.default.fileExists(atPath: file.path) { continue }
                    try Data(image).write(to: file)
                    try Data(expected.utf8).write(to: folder.appending(path: "\(index).json"))
                }
            }
        }
    }

    /// The canonical JSON of the state an image of `worker` holds.
    static func json(of image: [UInt8], worker: Worker) throws -> String {
        func render<S: Codable>(_: S.Type) throws -> String {
            String(decoding: try StateCoding.json(try StateCoding.decode(image, as: S.self)), as: UTF8.self)
        }
        switch worker {
        case .delivery: return try render(DeliveryState.self)
        case .score: return try render(ScoreState.self)
        case .sync: return try render(SyncState.self)
        case .reminder: return try render(ReminderState.self)
        case .access: return try render(AccessState.self)
        case .sender: return try render(SenderState.self)
        }
    }

    /// The binary image of the state a JSON image of `worker` holds.
    static func binary(of image: [UInt8], worker: Worker) throws -> [UInt8] {
        func encode<S: Codable>(_: S.Type) throws -> [UInt8] {
            try StateCoding.encode(try StateCoding.decode(image, as: S.self))
        }
        switch worker {
        case .delivery: return try encode(DeliveryState.self)
        case .score: return try encode(ScoreState.self)
        case .sync: return try encode(SyncState.self)
        case .reminder: return try encode(ReminderState.self)
        case .access: return try encode(AccessState.self)
        case .sender: return try encode(SenderState.self)
        }
    }
}
