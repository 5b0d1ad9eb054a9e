import Foundation
@testable import ProviderClients
import Testing

/// The `apns-id` an attempt carries names its notification (APNs echoes it and reports by it;
/// it does not drop repeats), the same every time the attempt is sent, so it must not change
/// across versions of the sender: a value pinned from the first implementation (SHA-256 of the
/// attempt id, version 5 and RFC 4122 variant bits, upper-case 8-4-4-4-12), and the form APNs
/// requires.
@Suite struct AttemptIdentityTests {
    @Test func theApnsIdOfAnAttemptIsTheOneEarlierVersionsSent() {
        #expect(AttemptIdentity.uuid(for: "d1~push~phone~1") == "95711BD0-752F-58DE-B323-609BF726E634")
    }

    @Test func everyApnsIdIsAVersion5UUIDInUpperCase() {
        for index in 0..<200 {
            let id = AttemptIdentity.uuid(for: "delivery-\(index)~push~device-\(index % 7)~\(index % 3 + 1)")
            #expect(UUID(uuidString: id) != nil && id == id.uppercased() && id.count == 36)
            let characters = Array(id)
            #expect(characters[14] == "5" && "89AB".contains(characters[19]), "\(id)")
        }
        #expect(AttemptIdentity.uuid(for: "a~push~p~1") != AttemptIdentity.uuid(for: "a~push~p~2"))
    }
}
