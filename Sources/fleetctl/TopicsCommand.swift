import ArgumentParser

struct TopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "topics", abstract: "Create and check the fleet's topics.")
}
