import ArgumentParser
import FleetModel
import FleetService
import FleetOperations
import FleetWorkers
import Foundation

/// Partition counts: the one change workers refuse to take in place.
struct PartitionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "partitions",
        abstract: "Change a worker's partition count safely.",
        subcommands: [Migrate.self])

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a worker to a new generation of its topics with N partitions, losing and repeating nothing.",
            discussion: """
                Workers refuse to run on a changed partition count (users would land away from their \
                state), so the count changes by moving the worker to a new generation of its log, \
                changelog and history (`<topic>.g<N>`). Steps:

                  1. create   the new generation's topics with N partitions
                  2. cutover  announce it in fleet.generations; the running worker stops folding the old \
                log, records where it stopped (a cut per partition) and carries the old log over into the new \
                one; producers keep writing into the old log
                  3. drain    wait until every old partition has its cut
                  4. re-key   each user's committed state goes to its new partition
                  5. activate the worker folds the new log; producers switch to it (deliveries resume)
                  6. history  the old history is copied into the new one while the worker folds
                  7. verify   new topics co-partitioned, every state re-keyed, the worker commits on the new log

                The worker must be running (its instances do steps 2 and 5 themselves, within \
                FLEET_METADATA_CHECK_INTERVAL_MS). Interrupted at any point, run the same command again: \
                each step checks whether it is done. --dry-run prints the plan and what is done; \
                --hold-before-activate stops after step 4, until the command runs again without it. Only \
                workers that own their log can migrate: delivery-worker, reminder-worker and sender-worker.
                """)

        @OptionGroup var connection: TopicsCommand.Connection
        @Option(help: "The worker to migrate: delivery-worker, reminder-worker or sender-worker.") var worker: String
        @Option(help: "The new partition count.") var to: Int
        @Option(help: "The worker's consumer group (default: $FLEET_GROUP_ID, else topic prefix + worker name, as the workers do).")
        var group: String?
        @Option(help: "Seconds to wait for the cuts, and for the worker to fold the new generation.") var waitTimeout: Int = 600
        @Option(help: "Replication factor of the new topics (-1: the broker's default).") var replicationFactor: Int32 = -1
        @Flag(help: "Print the plan and what is already done; change nothing.") var dryRun = false
        @Flag(help: ArgumentHelp(
            "Stop after the re-key, before the worker folds the new generation.",
            discussion: "The worker stays cut over and delivers nothing until the command runs again without this flag."))
        var holdBeforeActivate = false

        func validate() throws {
            guard let parsed = Worker(rawValue: worker) else {
                throw ValidationError("unknown worker '\(worker)': one of \(Worker.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard parsed.migrates else {
                throw ValidationError("\(worker) cannot migrate (\(parsed.whyNotMigrating)): only \(Worker.allCases.filter(\.migrates).map(\.rawValue).joined(separator: ", ")) can")
            }
            if to < 1 { throw ValidationError("--to is a partition count, 1 or more") }
            if waitTimeout < 1 { throw ValidationError("--wait-timeout is a number of seconds, 1 or more") }
        }

        func run() async throws {
            guard let worker = Worker(rawValue: worker) else { return }
            _ = try await connection.reader(timeout: 30)
            let environment = ProcessInfo.processInfo.environment
            let groupId = WorkerSettings.groupId(
                of: worker, configured: group ?? environment[WorkerEnvironment.groupId.name], topicPrefix: connection.namespace.prefix)
            let migration = PartitionMigration(
                worker: worker, partitions: to, configuration: try connection.kafkaConfiguration(), namespace: connection.namespace,
                groupId: groupId, replicationFactor: replicationFactor, waitTimeout: .seconds(waitTimeout),
                holdBeforeActivation: holdBeforeActivate, logger: connection.logger)
            // A MigrationError ("cannot go on") exits 1 with its reason (see ExitStatus).
            if dryRun {
                print(try await migration.plan())
                return
            }
            switch try await migration.run(report: { line in print(line) }) {
            case .complete: print("migration complete")
            case .heldBeforeActivation: print("migration held before activation")
            }
        }
    }
}
