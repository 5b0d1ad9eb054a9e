import FleetModel
public import FleetSimulation

/// `fleetctl replay --input FILE.jsonl`: a `fleetctl simulate` input (for instance one written by
/// `fleetctl export`) run through the whole fleet's logic, with the baseline profile and, for a
/// what-if, with a candidate profile, summarised as `fleetctl replay --profile` summarises a
/// replay from the brokers.
public enum InputReplay {
    /// Every output of the simulation with `profile`, in the order produced.
    public static func simulate(_ jsonl: String, profile: FleetProfile) throws(SimulationError) -> [SimulationOutput] {
        var simulator = try Simulator.fleet(profile: profile)
        var outputs: [SimulationOutput] = []
        for line in jsonl.split(separator: "\n", omittingEmptySubsequences: false) {
            outputs += try simulator.feed(line: line)
        }
        return outputs
    }

    /// The baseline run against the candidate run.
    public static func whatIf(_ jsonl: String, baseline: FleetProfile, candidate: FleetProfile) throws(SimulationError) -> WhatIfSummary {
        let recorded = try simulate(jsonl, profile: baseline).compactMap(\.record)
        let replayed = try simulate(jsonl, profile: candidate).compactMap(\.record)
        return WhatIfSummary(recorded: recorded, replayed: replayed, intentTypes: try intentTypes(jsonl))
    }

    /// The notification type of every intent written in the input itself, by intent id.
    static func intentTypes(_ jsonl: String) throws(SimulationError) -> [String: String] {
        var types: [String: String] = [:]
        for (index, line) in jsonl.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard let input = try SimulationInput.parse(line, line: index + 1), input.value["type"]?.stringValue == "intent",
                  let id = input.value["id"]?.stringValue, let type = input.value["notification"]?.stringValue
            else { continue }
            types[id] = type
        }
        return types
    }
}
