import ArgumentParser

/// The operator's command line for the retention notification fleet.
@main
struct FleetCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleetctl",
        abstract: "Operate the retention notification fleet: topics, simulation, replay.",
        subcommands: [TopicsCommand.self, SimulateCommand.self, ProduceCommand.self, DecisionsCommand.self, ReplayCommand.self, ExportCommand.self]
    )
}
