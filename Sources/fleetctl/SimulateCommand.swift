import ArgumentParser

struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "simulate", abstract: "Run the fleet's logic over a JSONL file.")
}
