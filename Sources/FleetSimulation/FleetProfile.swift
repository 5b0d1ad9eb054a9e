public import DeliveryPolicy
import Foundation
public import SenderCore
public import UpstreamProcessors

/// One policy profile file read by the whole fleet: the delivery engine's sections, the
/// upstream workers' `upstream:` section and the sender's `sender:` section (P-PROF-1). Loading
/// validates all three and names the field of the first problem.
public struct FleetProfile: Sendable {
    public var delivery: PolicyProfile
    public var upstream: UpstreamSettings
    public var sender: SenderPolicy

    public init(delivery: PolicyProfile, upstream: UpstreamSettings, sender: SenderPolicy = SenderPolicy()) {
        self.delivery = delivery
        self.upstream = upstream
        self.sender = sender
    }

    /// Parses a profile document.
    public init(yaml: String) throws(SimulationError) {
        do {
            delivery = try PolicyProfile.load(yaml: yaml)
        } catch {
            throw .profile("\(error)")
        }
        do {
            upstream = try UpstreamSettings.load(profileYAML: yaml)
        } catch {
            throw .profile("\(error)")
        }
        do {
            sender = try SenderPolicy.load(profileYAML: yaml)
        } catch {
            throw .profile("\(error)")
        }
    }

    /// A shipped profile (`rin`, `fitcircle`) or a file.
    public init(_ choice: ProfileChoice) throws(SimulationError) {
        let text: String
        switch choice {
        case .shipped(let name):
            do { text = try PolicyProfile.shippedYAML(name) } catch { throw .profile("\(error)") }
        case .file(let path):
            do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw .profile("cannot read '\(path)': \(error.localizedDescription)")
            }
        }
        try self.init(yaml: text)
    }
}
