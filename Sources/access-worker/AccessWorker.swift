import ArgumentParser
import WorkerCommands

/// The access worker executable: configuration from the environment (see `--help`), logic from the
/// policy profile, everything else from the shared runtime. The command itself is in
/// `WorkerCommands`, which the image's multi-call `fleetctl` shares.
@main
enum AccessWorkerMain {
    static func main() async {
        await AccessWorkerCommand.main()
    }
}
