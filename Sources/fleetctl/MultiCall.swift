import ArgumentParser
import Foundation
import Logging
import WorkerCommands

/// The image ships one binary (deploy/Dockerfile): `fleetctl`, with each worker's name a symbolic
/// link to it. Like busybox, it runs the command its name says (`delivery-worker` is the delivery
/// worker, with the same options and `--help` as the worker's own executable); under any other
/// name it is `fleetctl`. One copy of the statically linked Swift runtime, Foundation and the
/// fleet's code instead of six.
@main
enum MultiCall {
    static func main() async {
        let name = CommandLine.arguments.first?.split(separator: "/").last.map(String.init) ?? ""
        if let worker = WorkerCommands.command(named: name) {
            await worker.main()
        } else {
            // fleetctl's own log lines (and librdkafka's, see the Kafka module's LogBridge) go to
            // standard error at FLEET_LOG_LEVEL, default warning: a tool's answer and its one
            // error message are what an operator reads; connection retries are notices.
            let level = ProcessInfo.processInfo.environment["FLEET_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            await FleetCtl.runMain()
        }
    }
}
