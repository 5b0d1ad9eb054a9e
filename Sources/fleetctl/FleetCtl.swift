import ArgumentParser

/// The operator's command line for the retention notification fleet (started by `MultiCall`).
struct FleetCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleetctl",
        abstract: "Operate the retention notification fleet: topics, simulation, incident analysis, dead letters, partitions.",
        discussion: ExitStatus.table,
        subcommands: [
            TopicsCommand.self, SimulateCommand.self, ProduceCommand.self, DecisionsCommand.self,
            ExplainCommand.self, ReplayCommand.self, ExportCommand.self, DLQCommand.self, PartitionsCommand.self,
        ]
    )
}
