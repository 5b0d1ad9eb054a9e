import FleetModel
import FleetOperations
import PropertyBased
import Testing

@Suite struct ReplayRangeTests {
    let t0 = Timestamp.at("2026-11-21T09:00:00Z")

    @Test("--from/--to parse as an offset or an RFC 3339 time, and say what is wrong otherwise")
    func boundsParse() throws {
        #expect(try ReplayBound(parsing: "42") == .offset(42))
        #expect(try ReplayBound(parsing: "2026-11-21T09:00:00Z") == .time(t0))
        #expect(throws: ReplayError.self) { try ReplayBound(parsing: "-3") }
        let error = #expect(throws: ReplayError.self) { try ReplayBound(parsing: "yesterday") }
        #expect(error?.description.contains("RFC 3339") == true)
    }

    @Test("a time resolves to the first record stamped at or after it; --to is exclusive; no --to means the end")
    func timesResolveByScanning() throws {
        let records: [(offset: Int64, timestamp: Timestamp?)] = [
            (0, t0), (1, t0 + .seconds(60)), (2, t0 + .seconds(30)), (3, nil), (4, t0 + .seconds(120)),
        ]
        let range = try ReplayRange.resolve(partition: 2, from: .time(t0 + .seconds(60)), to: .time(t0 + .seconds(100)), records: records, end: 5)
        #expect(range == ReplayRange(partition: 2, from: 1, to: 4))
        #expect(try ReplayRange.resolve(partition: 0, from: .offset(3), to: nil, records: records, end: 5).to == 5)
        #expect(try ReplayRange.resolve(partition: 0, from: .time(t0 + .seconds(999)), to: nil, records: records, end: 5).from == 5)
        #expect(try ReplayRange.resolve(partition: 0, from: .offset(10), to: .offset(20), records: records, end: 5) == ReplayRange(partition: 0, from: 5, to: 5))
        #expect(throws: ReplayError.self) {
            try ReplayRange.resolve(partition: 0, from: .offset(4), to: .offset(2), records: records, end: 5)
        }
    }

    @Test("whatever the timestamps, a resolved time is the first offset stamped at or after it")
    func resolutionProperty() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...600).array(of: 0...20), Gen.int(in: 0...600)) { seconds, at in
            let records = seconds.enumerated().map { (offset: Int64($0.offset), timestamp: Optional(t0 + .seconds(Int64($0.element)))) }
            let time = t0 + .seconds(Int64(at))
            guard let range = try? ReplayRange.resolve(partition: 0, from: .time(time), to: nil, records: records, end: Int64(records.count)) else {
                Issue.record("resolution failed")
                return
            }
            for record in records where record.offset < range.from { #expect(record.timestamp.map { $0 < time } == true) }
            if range.from < Int64(records.count) { #expect(records[Int(range.from)].timestamp.map { $0 >= time } == true) }
        }
    }
}

/// When replay says history retention bounds how far back it can start (issue 13: not after an
/// aborted first transaction).
struct HistoryRetentionTests {
    @Test("an aborted first transaction (first record read above 0, log start 0) is not retention; a log start above 0 is, and names it")
    func abortedFirstTransactionIsNotRetention() {
        #expect(HistoryRetention.cut(firstRead: 3, logStart: 0) == nil)
        #expect(HistoryRetention.cut(firstRead: 0, logStart: 0) == nil)
        #expect(HistoryRetention.cut(firstRead: 120, logStart: 100) == 100)
        #expect(HistoryRetention.cut(firstRead: 100, logStart: 100) == 100)
    }
}
