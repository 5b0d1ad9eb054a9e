public import FleetModel
import DeliveryPolicy
import UpstreamProcessors
import Foundation

/// The five workers of DESIGN.md as simulation stages, in the order their timers win ties:
/// the four upstream workers first, so what they emit at a given time reaches the delivery
/// engine at that same time, then the delivery worker.
///
/// This is the one place that knows which processor runs in which worker; everything else in
/// the simulator is generic over `SimulationStage`.
public enum FleetStages {
    /// The fleet's stages from its processors. `deliveryZone` reads a user's time zone from the
    /// delivery engine's state, so `--summary` can count local days.
    public static func stages<Score: UserProcessor, Sync: UserProcessor, Reminder: UserProcessor, Access: UserProcessor, Delivery: UserProcessor>(
        score: Score, sync: Sync, reminder: Reminder, access: Access, delivery: Delivery,
        deliveryZone: (@Sendable (Delivery.State) -> Zone?)? = nil
    ) -> [any SimulationStage] {
        [
            FoldStage(worker: .score, processor: score),
            FoldStage(worker: .sync, processor: sync),
            FoldStage(worker: .reminder, processor: reminder),
            FoldStage(worker: .access, processor: access),
            FoldStage(worker: .delivery, processor: delivery, zone: deliveryZone),
        ]
    }
}

/// Which policy profile a simulation runs with (`--profile`).
public enum ProfileChoice: Hashable, Sendable, CustomStringConvertible {
    /// A profile shipped with the fleet, by name.
    case shipped(String)
    /// A profile file.
    case file(String)

    /// The profiles shipped with the fleet (DeliveryPolicy's `Profiles` resources).
    public static let shippedNames = ["fitcircle", "rin"]

    /// Resolves a `--profile` argument: a shipped profile's name, else a path to a readable
    /// file. A name wins over a file of the same name in the working directory; write
    /// `./rin` for the file.
    public static func resolve(_ argument: String) throws(SimulationError) -> ProfileChoice {
        if shippedNames.contains(argument) { return .shipped(argument) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), !isDirectory.boolValue,
              FileManager.default.isReadableFile(atPath: argument)
        else {
            throw .profile(
                "profile '\(argument)' is neither a shipped profile (\(shippedNames.joined(separator: ", "))) "
                    + "nor a readable file")
        }
        return .file(argument)
    }

    public var description: String {
        switch self {
        case .shipped(let name): name
        case .file(let path): path
        }
    }
}

extension Simulator {
    /// The whole fleet with `profile`, as `fleetctl simulate` runs it: the four upstream
    /// processors and the delivery engine, all configured from the one profile file.
    public static func fleet(profile choice: ProfileChoice) throws(SimulationError) -> Simulator {
        try fleet(profile: FleetProfile(choice))
    }

    public static func fleet(profile: FleetProfile) throws(SimulationError) -> Simulator {
        let upstream = UpstreamProcessors(settings: profile.upstream)
        return try Simulator(stages: FleetStages.stages(
            score: upstream.score, sync: upstream.sync, reminder: upstream.reminder, access: upstream.access,
            delivery: DeliveryEngine(profile: profile.delivery),
            deliveryZone: { $0.timeZone }))
    }
}
